import { MemoryUsageStore } from "../../../../lib/run/metering/memory-store.js";
import { describeUsageStore } from "./store-conformance.js";

describeUsageStore("memory", () => new MemoryUsageStore());
