/**
 * Canonical workspace paths. Every user-supplied path goes through normalizePath;
 * every storage key is built by storageKey. Pure: no I/O, no node:path.
 *
 * Canonical form: NFC, no leading or trailing slash, no empty, "." or ".." segments.
 * The root is "". `/a/b`, `a/b` and `./a//b/` all give "a/b".
 */
import { ToolError } from "../shared/errors.js";

/** Longest canonical path, in UTF-8 bytes (S3/R2 keys stop at 1024; the prefix needs room). */
export const MAX_PATH_BYTES = 768;
/** Longest single name, in UTF-8 bytes (the common filesystem limit). */
export const MAX_SEGMENT_BYTES = 255;

const encoder = new TextEncoder();
const byteLength = (s: string) => encoder.encode(s).length;

function invalid(input: string, why: string): ToolError {
  const shown = input.length > 120 ? `${input.slice(0, 117)}...` : input;
  return new ToolError("INVALID_PATH", `Invalid path ${JSON.stringify(shown)}: ${why}.`, { path: shown, reason: why });
}

/**
 * A path already canonical in printable ASCII, the common case: names of printable ASCII but the
 * slash and the backslash, none of only dots, none longer than MAX_SEGMENT_BYTES, joined by single slashes
 * (ASCII is its own NFC and its own UTF-8 length). Such a path is answered as it is in one pass;
 * anything else (the root, a slash to drop, a `..` to resolve, non-ASCII, an error to explain)
 * takes the full normalization below, which gives every canonical path back unchanged. The
 * download of a workspace checks each of its paths twice (the request, then fileKey).
 */
const CANONICAL_ASCII = /^(?!\.+(?:\/|$))[\x20-\x2e\x30-\x5b\x5d-\x7e]{1,255}(?:\/(?!\.+(?:\/|$))[\x20-\x2e\x30-\x5b\x5d-\x7e]{1,255})*$/;

/**
 * The workspace root as commands see it (bash's `pwd`, its errors, the process sandbox's link). An
 * absolute path under it names the workspace's own file: "/workspace/src/a.ts" is "src/a.ts", as
 * "/src/a.ts" is. (A top-level directory named "workspace" is reached as "workspace/…".)
 */
export const SANDBOX_ROOT = "workspace";

/** Returns the canonical workspace path of `input`, or throws INVALID_PATH. */
export function normalizePath(input: unknown): string {
  if (typeof input === "string" && input.length <= MAX_PATH_BYTES && CANONICAL_ASCII.test(input)) return input;
  return normalizePathInFull(input);
}

/** normalizePath without its shortcut for canonical ASCII (exported for the test that holds the two equal; callers use normalizePath). */
export function normalizePathInFull(input: unknown): string {
  if (typeof input !== "string") throw invalid(String(input), "a path must be a string");
  if (input.length > MAX_PATH_BYTES * 4) throw invalid(input, `longer than ${MAX_PATH_BYTES} bytes`);
  // Lone surrogates cannot be encoded as UTF-8 and would turn into U+FFFD: refuse them.
  if (!input.isWellFormed()) throw invalid(input, "it is not well-formed Unicode");
  // C0, DEL and C1 (the Unicode category Cc): NUL, newline, ESC, NEL ...
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(input)) throw invalid(input, "it contains a control character (NUL, newline, ...)");
  if (input.includes("\\")) throw invalid(input, "use '/' to separate directories, not '\\'");
  const nfc = input.normalize("NFC");
  const out: string[] = [];
  // An absolute path's first name SANDBOX_ROOT is the root itself (the path bash shows).
  let atRoot = nfc.startsWith("/");
  for (const segment of nfc.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (atRoot) {
      atRoot = false;
      if (segment === SANDBOX_ROOT) continue;
    }
    if (segment === "..") {
      if (out.length === 0) throw invalid(input, "'..' would leave the workspace");
      out.pop();
      continue;
    }
    if (/^\.{3,}$/.test(segment)) throw invalid(input, "a name of only dots is not allowed");
    if (byteLength(segment) > MAX_SEGMENT_BYTES) throw invalid(input, `a name is longer than ${MAX_SEGMENT_BYTES} bytes`);
    out.push(segment);
  }
  const path = out.join("/");
  if (byteLength(path) > MAX_PATH_BYTES) throw invalid(input, `longer than ${MAX_PATH_BYTES} bytes`);
  return path;
}

/** Like normalizePath, but the workspace root is refused (for files). */
export function normalizeFilePath(input: unknown): string {
  const path = normalizePath(input);
  if (path === "") throw new ToolError("IS_DIRECTORY", "The workspace root is a directory, not a file. Give a file path such as src/index.ts.", { path: "/" });
  return path;
}

export const parentOf = (path: string): string => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");
export const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1);
export const joinPath = (dir: string, name: string): string => (dir === "" ? name : `${dir}/${name}`);
/** All ancestors of a path, nearest first, root ("") excluded. */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(path); p !== ""; p = parentOf(p)) out.push(p);
  return out;
}
/** True when `path` is `dir` or lies below it. */
export const isWithin = (path: string, dir: string): boolean => dir === "" || path === dir || path.startsWith(`${dir}/`);
/** True for a path whose any segment starts with a dot. */
export const isHidden = (path: string): boolean => path.split("/").some((s) => s.startsWith("."));

/** Identifiers of tenants and workspaces: lower-case slugs, safe in keys and URLs. */
export const ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** Session ids (X-Session-Id): they name keys (todos, shells, undo) and URL paths (.../sessions/{session}/sandbox), where "." and ".." alone are resolved away. */
const SESSION_PATTERN = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,128}$/;
export function checkSessionId(session: string): string {
  if (!SESSION_PATTERN.test(session)) {
    throw new ToolError("INVALID_ARGUMENT", "Invalid X-Session-Id: use 1-128 characters from A-Z a-z 0-9 . _ : -, not \".\" or \"..\" alone (a URL path cannot name those)", { session: session.slice(0, 140) });
  }
  return session;
}

/**
 * Storage key layout; the only place keys are built. Tenant and workspace always come
 * from the authenticated request (never from a body), and are checked against ID_PATTERN.
 *   t/<tenant>/w/<ws>/meta.json      workspace record
 *   t/<tenant>/w/<ws>/f/<path>       files
 *   t/<tenant>/w/<ws>/f/<dir>/       an explicit directory: a zero-byte marker (dirMarkerKey)
 *   t/<tenant>/w/<ws>/x/<name>       internal data (indexes, run records, todo lists, ...), never listed as files
 *   t/<tenant>/w/<ws>/x/call-tasks/<key id>/<id>.json   a key's call task (callTaskKey)
 *   t/<tenant>/tenant.json           the tenant record
 *   t/<tenant>/idem/<sha256>.json    a stored answer to an Idempotency-Key (admin/idem/ for the admin token)
 *   t/<tenant>/audit/<id>.json       the tenant's audit entries (tenantAuditPrefix)
 */
export function workspacePrefix(tenant: string, workspace: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  if (!ID_PATTERN.test(workspace)) throw new ToolError("INVALID_ARGUMENT", `Bad workspace id ${JSON.stringify(workspace)}: use lower-case letters, digits, '-' and '_' (at most 63).`);
  return `t/${tenant}/w/${workspace}/`;
}
export function tenantWorkspacesPrefix(tenant: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/w/`;
}
/** Every tenant lives below this prefix (t/<tenant>/...). */
export const TENANTS_PREFIX = "t/";
export function tenantRecordKey(tenant: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/tenant.json`;
}
/**
 * A stored answer to a request sent with an Idempotency-Key (lib/api/idempotency.ts), by the SHA-256 of
 * the key: t/<tenant>/idem/<hash>.json for a tenant's key, admin/idem/<hash>.json for the admin token.
 * IDEMPOTENCY_ADMIN, the admin token's scope, is not a tenant id (ID_PATTERN refuses parentheses), so no tenant shares it.
 */
export const IDEMPOTENCY_ADMIN = "(admin)";
export function idempotencyRecordKey(tenant: string, keyHash: string): string {
  if (!/^[0-9a-f]{64}$/.test(keyHash)) throw new ToolError("INTERNAL", "Bad idempotency key hash.");
  if (tenant === IDEMPOTENCY_ADMIN) return `admin/idem/${keyHash}.json`;
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/idem/${keyHash}.json`;
}
export const idempotencyPrefix = (tenant: string): string => (tenant === IDEMPOTENCY_ADMIN ? "admin/idem/" : `${tenantRecordKey(tenant).slice(0, -"tenant.json".length)}idem/`);
/** A tenant's custom tool definitions, one object (lib/tools/custom/store.ts). */
export function customToolsKey(tenant: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/custom-tools.json`;
}
/** A tenant's secrets, encrypted, one object (lib/tools/secrets/store.ts). */
export function tenantSecretsKey(tenant: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/secrets.json`;
}
export const filesPrefix = (tenant: string, workspace: string): string => `${workspacePrefix(tenant, workspace)}f/`;
export const internalPrefix = (tenant: string, workspace: string): string => `${workspacePrefix(tenant, workspace)}x/`;
/** Which files of the workspace are executable (the bash runner keeps the exec bit here; lib/layout/modes.ts). */
export const modesKey = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}modes.json`;
/** Unfinished directory moves: t/<tenant>/w/<ws>/x/moves/<sha-256 of from and to>.json (lib/workspace/move-journal.ts). */
export const moveJournalPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}moves/`;
export function moveJournalKey(tenant: string, workspace: string, id: string): string {
  if (!/^[0-9a-f]{64}$/.test(id)) throw new ToolError("INTERNAL", "Bad move journal id.");
  return `${moveJournalPrefix(tenant, workspace)}${id}.json`;
}
/** The undo journals of a workspace: x/undo/<session>/<stamp>/r-<id>.json, b-<id> (blobs), undone (lib/workspace/undo-journal.ts). */
export const undoPrefix = (tenant: string, ws: string): string => `${internalPrefix(tenant, ws)}undo/`;
export const sessionUndoPrefix = (tenant: string, ws: string, session: string): string => `${undoPrefix(tenant, ws)}${session}/`;
/** Run ids (bash runs and background tasks): "r" + 15 hex digits, see lib/sync/run-records.ts. */
export const RUN_ID_PATTERN = /^r[0-9a-f]{15}$/;
/** A run's record: t/<tenant>/w/<ws>/x/runs/<run id>/ (claim, result, output chunks, kill flag). */
export function runPrefix(tenant: string, workspace: string, runId: string): string {
  if (!RUN_ID_PATTERN.test(runId)) throw new ToolError("INTERNAL", "Bad run id.");
  return `${internalPrefix(tenant, workspace)}runs/${runId}/`;
}
/** Audit log entries (lib/run/audit/): t/<tenant>/w/<ws>/x/audit/<time-ordered id>.json, one small object each (no hot key). */
export const AUDIT_ID_PATTERN = /^\d{8}T\d{9}Z-[a-z2-7]{10}$/;
export const auditPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}audit/`;
/** The tenant's own audit entries (keys, policies, workspaces made and deleted): t/<tenant>/audit/<time-ordered id>.json. */
export function tenantAuditPrefix(tenant: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/audit/`;
}
/** A `task` subagent run's record (functions/task.ts). */
export const taskKey = (tenant: string, workspace: string, id: string): string => `${internalPrefix(tenant, workspace)}tasks/${id}.json`;
/**
 * Call tasks (lib/run/tasks/store.ts), below the key that made them (a key lists its own, no other's):
 * x/call-tasks/<key id>/<id>.json, id "c" + its creation time counted down (9 characters: newest first)
 * + 16 random. The first layout's x/call-tasks/<id>.json (id "c" + 24 random) is read by id until its ttl.
 */
export const CALL_TASK_ID_PATTERN = /^c[a-z2-7]{25}$/;
export const LEGACY_CALL_TASK_ID_PATTERN = /^c[a-z2-7]{24}$/;
/** Key ids in keys: an API key's (10 base32 characters) or an OAuth principal's (oauth_ + hex). */
const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
function checkKeyId(keyId: string): string {
  if (!KEY_ID_PATTERN.test(keyId)) throw new ToolError("INTERNAL", "Bad key id.");
  return keyId;
}
/** Every key's call tasks of a workspace, both layouts (the housekeeping sweep, GC and workspace delete list below it). */
export const callTasksPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}call-tasks/`;
/** One key's call tasks, newest first. */
export const keyCallTasksPrefix = (tenant: string, workspace: string, keyId: string): string => `${callTasksPrefix(tenant, workspace)}${checkKeyId(keyId)}/`;
/** The record of call task `id` of key `keyId` (an id of the first layout: its record in the shared folder); null for an id of neither shape. */
export function callTaskKey(tenant: string, workspace: string, keyId: string, id: string): string | null {
  if (CALL_TASK_ID_PATTERN.test(id)) return `${keyCallTasksPrefix(tenant, workspace, keyId)}${id}.json`;
  return LEGACY_CALL_TASK_ID_PATTERN.test(id) ? `${callTasksPrefix(tenant, workspace)}${id}.json` : null;
}

/** A session's todo list: t/<tenant>/w/<ws>/x/todos/<session>.json (lib/tools/todos/store.ts); the session id is checked (INVALID_ARGUMENT). */
export const todosPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}todos/`;
export const todosKey = (tenant: string, workspace: string, session: string): string => `${todosPrefix(tenant, workspace)}${checkSessionId(session)}.json`;
/** Full outputs of cut commands, outside the workspace's files (lib/sync/output-logs.ts): t/<tenant>/w/<ws>/x/outputs/<name>. */
export const outputLogsPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}outputs/`;
/** A full output's name: <UTC time to the millisecond>-<run id>.log (sorts by time). */
export const OUTPUT_LOG_NAME = /^\d{8}T\d{9}Z-r[0-9a-f]{15}\.log$/;
/** A session's shell state (cwd, kept variables and functions), its saving key's: x/shells/<key id>/<session>.json (lib/exec/shell-session.ts); both ids checked. Before 2026-12-02 it was the workspace's, x/shells/<session>.json (legacyShellKey: never applied, only looked for to tell the session it was dropped). */
export const shellKey = (tenant: string, workspace: string, keyId: string, session: string): string => `${keyShellsPrefix(tenant, workspace, keyId)}${checkSessionId(session)}.json`;
export const legacyShellKey = (tenant: string, workspace: string, session: string): string => `${shellsPrefix(tenant, workspace)}${checkSessionId(session)}.json`;
export const shellsPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}shells/`;
export const keyShellsPrefix = (tenant: string, workspace: string, keyId: string): string => `${shellsPrefix(tenant, workspace)}${checkKeyId(keyId)}/`;
export const PENDING_ID_PATTERN = /^p[a-z2-7]{24}$/; // ids of pending calls (ask_user, the approval gate): "p" + 24 base32 characters (lib/run/pending/store.ts)
/** Pending calls: t/<tenant>/w/<ws>/x/pending/<id>.json; a malformed id is NOT_FOUND, the one answer (pendingNotFound) for any id not in the workspace. */
export const pendingPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}pending/`;
export function pendingKey(tenant: string, workspace: string, id: string): string {
  if (!PENDING_ID_PATTERN.test(id)) throw pendingNotFound(workspace, id.slice(0, 40));
  return `${pendingPrefix(tenant, workspace)}${id}.json`;
}
export const pendingNotFound = (workspace: string, id: string) => new ToolError("NOT_FOUND", `No pending call ${id} in workspace ${workspace}. List them with GET /v1/workspaces/${workspace}/pending.`, { pending_id: id });
/**
 * The storage key of a canonical workspace path (the root maps to the files prefix itself).
 * A path that is not canonical is refused, so a caller that skipped normalizePath cannot build
 * a key with "..", "//" or unnormalized Unicode (some HTTP layers resolve dot segments in S3 URLs).
 */
export function fileKey(tenant: string, workspace: string, canonicalPath: string): string {
  const prefix = filesPrefix(tenant, workspace);
  if (normalizePath(canonicalPath) !== canonicalPath) throw invalid(canonicalPath, "it is not a canonical workspace path (normalize it first)");
  return prefix + canonicalPath;
}

/**
 * Explicit directories: a zero-byte marker object at the directory's key plus "/" (the S3
 * "folder" convention). With a "/" delimiter it rolls up into its parent's listing like any
 * directory; in a flat listing it is the one kind of key that ends with "/". Directories implied
 * by the files below them need none. Only the Workspace reads markers (as directory entries).
 */
export const DIR_MARKER_SUFFIX = "/";
/** The marker key of a canonical directory path (never the root, which always exists). */
export function dirMarkerKey(tenant: string, workspace: string, canonicalDir: string): string {
  if (canonicalDir === "") throw new ToolError("INVALID_PATH", "The workspace root always exists; give a directory inside it.", { path: "/" });
  return fileKey(tenant, workspace, canonicalDir) + DIR_MARKER_SUFFIX;
}
/** True for a storage key (or a path relative to the files prefix) that is a directory marker. */
export const isDirMarker = (keyOrRel: string): boolean => keyOrRel.endsWith(DIR_MARKER_SUFFIX);
/** The canonical directory path of a marker given relative to the files prefix ("a/b/" → "a/b"). */
export const markerDir = (rel: string): string => rel.slice(0, -DIR_MARKER_SUFFIX.length);

/**
 * Layers (lib/layers/): immutable packs and manifests, shared by a workspace and its forks, so
 * kept per tenant; ids are random (LAYER_ID_PATTERN), never from a request body unchecked.
 *   t/<tenant>/packs/<id>                       concatenated file contents (≤ ~8 MB)
 *   t/<tenant>/manifests/<id>                   sorted entries: path, etag, size, modified, pack, offset
 *   t/<tenant>/w/<ws>/x/checkpoints/<id>.json   a checkpoint of a workspace (name, manifest, time)
 */
export const LAYER_ID_PATTERN = /^[a-z0-9]{8,40}$/;
function layerId(id: string): string {
  if (!LAYER_ID_PATTERN.test(id)) throw new ToolError("NOT_FOUND", `No such checkpoint or layer: ${JSON.stringify(id)}. List checkpoints with GET /v1/workspaces/{ws}/checkpoints.`, { id });
  return id;
}
export function packKey(tenant: string, id: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/packs/${layerId(id)}`;
}
export function manifestKey(tenant: string, id: string): string {
  if (!ID_PATTERN.test(tenant)) throw new ToolError("INTERNAL", "Bad tenant id.");
  return `t/${tenant}/manifests/${layerId(id)}`;
}
export const checkpointsPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}checkpoints/`;
export const checkpointKey = (tenant: string, workspace: string, id: string): string => `${checkpointsPrefix(tenant, workspace)}${layerId(id)}.json`;
/** The workspace record (layer pointer included): t/<tenant>/w/<ws>/meta.json. */
export const workspaceMetaKey = (tenant: string, workspace: string): string => `${workspacePrefix(tenant, workspace)}meta.json`;
/** The tenant and workspace whose record `key` is (workspaceMetaKey's inverse), or null for any other key. */
export function workspaceOfMetaKey(key: string): { tenant: string; workspace: string } | null {
  const m = /^t\/([^/]+)\/w\/([^/]+)\/meta\.json$/.exec(key);
  if (!m || !ID_PATTERN.test(m[1]!) || !ID_PATTERN.test(m[2]!)) return null;
  return { tenant: m[1]!, workspace: m[2]! };
}

/** A tenant's OAuth resource-server configuration (lib/api/auth/oauth-config.ts): its trusted issuers. */
export function tenantOAuthKey(tenant: string): string {
  return `${tenantRecordKey(tenant).slice(0, -"tenant.json".length)}oauth.json`;
}
/** Below it, one claim per (issuer, audience) pair, named by their SHA-256 hashes: which tenant trusts it (unique, created with If-None-Match: *). */
export const OAUTH_ISSUERS_PREFIX = "oauth/issuers/";
