/** The explicit list of tools: the registry is data. */
import type { Tool } from "../lib/tool.js";
import edit from "./edit.js";
import multi_edit from "./multi_edit.js";
import read from "./read.js";
import write from "./write.js";

export const tools: readonly Tool[] = [read, write, edit, multi_edit];
