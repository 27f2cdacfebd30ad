/** The explicit list of tools: the registry is data. */
import type { Tool } from "../lib/contract/tool.js";
import apply_patch from "./apply_patch.js";
import ask_user from "./ask_user.js";
import bash from "./bash.js";
import bash_output from "./bash_output.js";
import copy from "./copy.js";
import del from "./delete.js";
import edit from "./edit.js";
import find from "./find.js";
import glob from "./glob.js";
import grep from "./grep.js";
import insert from "./insert.js";
import kill_shell from "./kill_shell.js";
import ls from "./ls.js";
import move from "./move.js";
import multi_edit from "./multi_edit.js";
import pending_result from "./pending_result.js";
import read from "./read.js";
import run_code from "./run_code.js";
import task from "./task.js";
import task_output from "./task_output.js";
import todo_read from "./todo_read.js";
import todo_write from "./todo_write.js";
import web_fetch from "./web_fetch.js";
import web_search from "./web_search.js";
import write from "./write.js";

export const tools: readonly Tool[] = [read, write, edit, multi_edit, insert, apply_patch, ls, del, move, copy, glob, grep, find, bash, run_code, bash_output, kill_shell, todo_write, todo_read, ask_user, pending_result, web_fetch, web_search, task, task_output];
