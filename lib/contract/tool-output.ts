/**
 * Pieces of tools' output schemas (the zod schema of `data`) that several tools share.
 * Every tool declares `output` in defineTool; test/helpers.ts validates every `data` a test
 * produces against it, so a schema here that drifts from what a tool returns fails the suite.
 */
import { z } from "@hono/zod-openapi";

/** What a listing left out (lib/search/ignore.ts SkipReport.toJSON). */
export const SkippedReport = z.object({
  total: z.number().int(),
  counts: z.record(z.string(), z.number().int()),
  examples: z.record(z.string(), z.array(z.string())),
});

/** Where a cut output left text out (lib/shared/output-cut.ts). */
export const OutputCutInfo = z.object({
  total_bytes: z.number().int(),
  total_lines: z.number().int(),
  omitted_bytes: z.number().int(),
  omitted_from_line: z.number().int(),
  omitted_to_line: z.number().int(),
}).loose();

/** A finished command's result (lib/exec/tool-support.ts commandData). */
export const CommandResult = z.object({
  stdout: z.string(),
  stderr: z.string(),
  exit_code: z.number().int().nullable(),
  duration_ms: z.number(),
  truncated: z.boolean(),
  output_file: z.string().optional(),
  output_cut: OutputCutInfo.optional(),
  files_changed: z.array(z.string()),
  files_deleted: z.array(z.string()),
  dirs_created: z.array(z.string()).optional(),
  dirs_deleted: z.array(z.string()).optional(),
  links_changed: z.array(z.string()).optional(),
  modes_changed: z.array(z.string()).optional(),
  conflicts: z.array(z.object({ path: z.string(), change: z.enum(["created", "modified", "deleted"]), reason: z.string() }).loose()),
  unsynced: z.record(z.string(), z.unknown()).optional(),
  skipped: z.array(z.object({ path: z.string(), reason: z.string(), detail: z.string().optional() })).optional(),
  /** The write-back's undo id, when the run changed files or symlinks (POST /v1/workspaces/{ws}/undo). */
  call_id: z.string().optional(),
});

/** A move or copy (lib/workspace/transfer-run.ts TransferResult, plus count). */
export const TransferOutput = z.object({
  from: z.string(),
  to: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  files: z.array(z.object({ from: z.string(), to: z.string(), size: z.number().int(), etag: z.string(), replaced: z.boolean() })),
  links: z.array(z.object({ from: z.string(), to: z.string(), target: z.string(), replaced: z.boolean() })).optional(),
  directories: z.array(z.string()),
  bytes: z.number().int(),
  overwritten: z.number().int(),
  kept: z.array(z.string()).optional(),
  notes: z.array(z.string()).optional(),
  finished: z.boolean().optional(),
  via_link: z.object({ link: z.string(), target: z.string() }).optional(),
  count: z.number().int(),
});

export const TodoItemOut = z.object({ content: z.string(), activeForm: z.string(), status: z.enum(["pending", "in_progress", "completed"]) });
export const TodoCountsOut = z.object({ pending: z.number().int(), in_progress: z.number().int(), completed: z.number().int() });

/** Paging fields of the listing tools. */
export const Paging = {
  count: z.number().int(),
  total_found: z.number().int(),
  truncated: z.boolean(),
  next_offset: z.number().int().nullable(),
};

/**
 * One page of a listing tool's results (find, glob): at most `limit` from `offset`; `end` is where
 * the next page starts, `showing` the " (showing a-b)" of its header line when it is not all of
 * them, and `fields` the Paging fields of its data.
 */
export function pageOf<T>(all: readonly T[], offset: number, limit: number) {
  const page = all.slice(offset, offset + limit);
  const end = offset + page.length;
  const more = all.length > end;
  const showing = offset > 0 || more ? ` (showing ${offset + 1}-${end})` : "";
  return { page, end, more, showing, fields: { count: page.length, total_found: all.length, truncated: more, next_offset: more ? end : null } };
}

/**
 * What a human changed or said when approving a held call (lib/run/pending/approve.ts): in every
 * tool's `data` (defineTool adds it), beside the same words at the top of `output`.
 */
export const ApprovalInfo = z
  .object({
    approved_by: z.string().openapi({ description: "The approver's key id" }),
    modified_args: z.boolean(),
    asked_args: z.record(z.string(), z.unknown()).optional().openapi({ description: "What the agent asked for, when the approver changed it" }),
    ran_args: z.record(z.string(), z.unknown()).optional().openapi({ description: "What ran instead" }),
    note: z.string().optional(),
  })
  .openapi("ApprovalInfo");
