import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { describeStorageConformance } from "./conformance.js";

describeStorageConformance("memory", () => memoryDriver());
