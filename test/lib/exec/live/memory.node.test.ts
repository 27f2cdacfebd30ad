/** The live coordinator in one process's memory: the conformance suite. */
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { describeLiveCoordinator, FAST } from "./coordinator-conformance.js";

describeLiveCoordinator("memory", () => memoryLiveCoordinator(FAST));
