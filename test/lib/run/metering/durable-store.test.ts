/** The Workers usage store: the conformance suite through the real Durable Object (SQLite) in workerd. */
import { env } from "cloudflare:workers";
import { durableUsageStore, type UsageObjects } from "../../../../lib/run/metering/durable-store.js";
import { describeUsageStore } from "./store-conformance.js";

describeUsageStore("Durable Object per tenant", () => durableUsageStore(env.USAGE as unknown as UsageObjects));
