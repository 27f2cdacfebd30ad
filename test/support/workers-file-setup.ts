/**
 * The workers project's setupFiles entry (vitest.config.ts): runs before each test file, in the
 * runtime the file runs in. The project shares one runtime among the files a pool worker runs in
 * turn, so each file starts here from empty local R2 and KV, as it did with a runtime of its own.
 */
import { emptyLocalStorage } from "./empty-local-storage.js";

await emptyLocalStorage();
