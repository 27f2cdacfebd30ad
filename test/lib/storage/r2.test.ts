import { env } from "cloudflare:workers";
import type { WorkersEnv } from "../../../lib/env.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { describeStorageConformance } from "./conformance.js";

describeStorageConformance("r2 binding", () => r2Driver((env as unknown as WorkersEnv).FILES));
