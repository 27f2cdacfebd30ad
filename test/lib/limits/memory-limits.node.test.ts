/** memoryLimits (one process's store) against the limits store's conformance suite: both handles are the one store. */
import { memoryLimits } from "../../../lib/limits/store.js";
import { describeLimitsStore } from "./store-conformance.js";
import { describeWriteBackHolds } from "./hold-conformance.js";

describeLimitsStore("memory", (now) => {
  const store = memoryLimits(now);
  return { a: store, b: store };
});

describeWriteBackHolds("memory", () => {
  const store = memoryLimits();
  return { a: store, b: store };
});
