/**
 * The runner's side of the contract with Toolshed (lib/exec/types.ts has the run request and result):
 * its claim on a run and the run record it streams to, and the SyncClient through which it
 * reads and writes one workspace. Pure types: bundles for Workers.
 */
import type { BatchFile } from "./batch.js";
import type { DeleteManyResult, PutManyItem, PutManyResult } from "./put-batch.js";
import type { CommitResult, StageResult } from "./stage.js";
import type { WriteBackPlan } from "./writeback-bound.js";
import type { HoldTerms } from "./writeback-hold.js";
import type { DeleteCheck } from "./delete-check.js";
import type { ExecModes, ModesDelta } from "../layout/modes.js";

/** How a run reaches the sync API: its URL and the run's token (part of the run request, lib/exec/types.ts RunRequest). */
export interface SyncAccess {
  /** Base URL of the Toolshed API, e.g. https://api.toolshed.dev ; the client appends /v1/sync/... */
  url: string;
  /** Short-lived bearer token scoped to tenant + workspace + run (see lib/sync/token.ts). */
  token: string;
}

/** The container function's answer, kept as a run's result (lib/sync/run-records.ts): errors are data (codes of lib/shared/errors.ts). */
export type ExecResponse<T = unknown> =
  | { ok: true; result: T }
  | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

// ---------------------------------------------------------------- run records

/** The runner's claim on a run: created once (If-None-Match: *); a retry finds it. */
export interface RunClaim {
  run_id: string;
  task: boolean;
  /** Epoch ms. */
  started_at: number;
  /** Epoch ms after which the run cannot report any more (its sync token expired). */
  deadline: number;
  /** The attempt that holds it (ClaimRequest.attempt); absent from claims of runners before it. */
  attempt?: string;
}

/**
 * What a runner asks for when it claims a run. `attempt`: a random id of this attempt (one
 * invocation's one try), so that the attempt that made the claim is told `claimed` again when it
 * asks once more (its request retried after a lost answer, or its claim sent alone after the
 * manifest request that carried it failed: infra/container/riding-claim.ts); any other attempt (a
 * retried invocation) finds the claim taken. Absent (older runners): every repeat finds it taken.
 */
export interface ClaimRequest {
  task: boolean;
  attempt?: string;
}

/**
 * A run's claim carried by the runner's first request to the API, its conditional manifest
 * (lib/sync/view.ts conditionalManifest; POST /v1/sync/manifest with `claim`): one request where
 * there were two. `carry` gives the claim to the one request that carries it (null: it is on its
 * way already, alone or carried); `answered` takes that request's outcome (null: the request failed
 * or the API took no claim, an older one: the claim is then sent alone, POST /v1/sync/run/claim).
 */
export interface ClaimRider {
  carry(): ClaimRequest | null;
  answered(outcome: ClaimOutcome | null): void;
  /** Sends the claim alone now, unless it is on its way (a path that carries nothing). */
  alone(): void;
}

export type ClaimOutcome =
  /** This invocation runs the command; kill: a kill was requested before it started. */
  | { claimed: true; kill: boolean }
  /** Another invocation (maybe in another execution environment) claimed it first. */
  | { claimed: false; claim: RunClaim | null; result: ExecResponse | null };

/**
 * What the container function may do to its own run's record (`x/runs/<run id>/` of the
 * workspace), and nothing more: the run is fixed by the sync token, never named in a call.
 */
export interface RunRecordClient {
  claim(opts: ClaimRequest): Promise<ClaimOutcome>;
  /** The record as it stands (a retry waiting for the first attempt). */
  state(): Promise<{ claim: RunClaim | null; result: ExecResponse | null }>;
  /** Stores output chunk `seq` (1, 2, ...; a repeated seq is ignored); answers the kill flag. */
  output(seq: number, text: string): Promise<{ kill: boolean }>;
  /** Whether a kill was requested. */
  killRequested(): Promise<boolean>;
  /** Stores the final answer (once). */
  finish(res: ExecResponse): Promise<void>;
  /** Drops the claim of a run whose command never started, so a retry may run it. */
  release(): Promise<void>;
}

// ---------------------------------------------------------------- sync client

export interface SyncEntry {
  /**
   * Canonical workspace path of a file; or, ending in "/", of an explicit directory (a marker:
   * an empty directory kept on purpose, lib/layout/paths.ts), whose etag is its marker's.
   */
  path: string;
  etag: string;
  size: number;
}

export interface SyncFile {
  body: ReadableStream<Uint8Array>;
  etag: string;
  size: number;
}

export type SyncPutResult = { ok: true; etag: string } | { ok: false; conflict: true };
/** `gone` (rmdir): another writer had removed it, so it freed nothing into the write-back's hold. */
export type SyncDeleteResult = { ok: true; gone?: true } | { ok: false; conflict: true };


/**
 * What the container function may do to one workspace, and nothing more. Tenant and
 * workspace are fixed by the token, never named in a call.
 */
export interface SyncClient {
  /** Every file of the workspace (metadata only). */
  manifest(): Promise<SyncEntry[]>;
  /** null when the file does not exist (any more). */
  fetch(path: string): Promise<SyncFile | null>;
  /**
   * Small files in one request, streamed (lib/sync/batch.ts): the iterable yields each file
   * as it arrives, in the order asked, or in any order (each path once) when `etags` are given (and throws when the answer is cut or malformed).
   * An entry is `missing` when the file is gone or too large for a batch (fetch it alone), `later`
   * when the server read its share of files one by one (ask again). null when the other end has
   * no batches (an older API). `etags`: the etag listed for each path, which lets the API read
   * files still at that version from packs (lib/sync/fetch.ts); each answer carries the
   * etag of its bytes, whatever was asked.
   */
  fetchMany(paths: string[], etags?: string[]): Promise<AsyncIterable<BatchFile> | null>;
  /** Conditional write: ifMatch (the version the run started from) or ifNoneMatch "*" (create). */
  /** `hold`: the write-back's hold it draws on (lib/sync/writeback-hold.ts). */
  put(path: string, body: Uint8Array | ReadableStream<Uint8Array>, opts: { ifMatch?: string; ifNoneMatch?: "*"; size?: number; hold?: string }): Promise<SyncPutResult>;
  /**
   * Saves the full output of this run (its merged output was cut) outside the workspace's files
   * (lib/sync/output-logs.ts); returns its name for output_file. Absent: the full output is not kept.
   */
  putOutputLog?(runId: string, body: ReadableStream<Uint8Array>, size: number): Promise<string>;
  /** Conditional delete; a file already gone is ok (the outcome the command wanted). */
  delete(path: string, opts: { ifMatch: string }): Promise<SyncDeleteResult>;
  /**
   * Many small files (up to 1 MiB each) in one request, each conditional like put; a result per
   * file in the order given (lib/sync/put-batch.ts). null when the other end has no batches
   * (an older API): use put. Absent: this client has none. `plan`: the whole write-back (on its
   * first batch, which may hold no file): the API throws QUOTA_EXCEEDED, before it writes any
   * file, when the storage quotas could not accept it whole (lib/sync/writeback-bound.ts).
   */
  putMany?(files: PutManyItem[], plan?: WriteBackPlan, terms?: HoldTerms): Promise<PutManyResult[] | null>;
  /**
   * Takes the write-back's hold on the storage quotas (lib/sync/writeback-hold.ts: a put batch of no
   * file with the plan, its deletes credited): its id, to pass to every later request of the
   * write-back (`terms`, put's `hold`); null when the API counts nothing. QUOTA_EXCEEDED when refused.
   */
  hold?(plan: WriteBackPlan): Promise<string | null>;
  /**
   * Packed write-back (lib/sync/stage.ts): many small files into one new pack, nothing
   * visible yet; a result per file and a receipt. null when the other end has no such route (an
   * older API): use putMany. Absent: this client has none. `plan`: the whole write-back and the
   * run's count so far (the API refuses with QUOTA_EXCEEDED, before it writes, what the storage
   * quotas could not accept). `terms`: the write-back's hold (its room counted as the run's).
   */
  stage?(files: PutManyItem[], plan?: WriteBackPlan, terms?: HoldTerms): Promise<{ files: StageResult[]; receipt: string } | null>;
  /** Makes staged files current with one switch of the layer pointer; a result per staged file, in the order staged. null as stage. `terms`: the hold its charge draws on. */
  commit?(receipts: string[], paths: string[], terms?: HoldTerms): Promise<CommitResult[] | null>;
  /**
   * Where each file to be deleted stands now against the version the run started from (lib/sync/delete-check.ts:
   * current, changed, gone), nothing written, up to DELETE_BATCH_MAX_FILES a request; null / absent as putMany.
   */
  checkDeletes?(files: { path: string; ifMatch: string }[]): Promise<DeleteCheck[] | null>;
  /** Many conditional deletes in one request, a result per file in the order given; null / absent as putMany. */
  deleteMany?(files: { path: string; ifMatch: string }[], terms?: HoldTerms): Promise<DeleteManyResult[] | null>;
  /**
   * Makes `dir` an explicit directory (its marker): ok with the marker's etag, made now or there
   * already; conflict when a file has the path or a parent path. A marker made is one entry of the
   * storage quotas' files (QUOTA_EXCEEDED when it does not fit); `hold`: drawn on the write-back's hold.
   */
  mkdir(dir: string, opts?: { hold?: string }): Promise<SyncPutResult>;
  /**
   * Removes the marker of `dir` if it is still the version the run started from; one already gone is ok
   * (`gone`). `hold`: the entry it frees moves into the write-back's hold (it was credited there).
   */
  rmdir(dir: string, opts: { ifMatch: string; hold?: string }): Promise<SyncDeleteResult>;
  /**
   * Changes executable bits, merged with concurrent changes; the list as it now stands. (They
   * are read with the conditional manifest: lib/sync/manifest.ts.)
   */
  updateModes(delta: ModesDelta): Promise<ExecModes>;
}
