/**
 * What an undo record holds (x/undo/<session>/<stamp>/r-<id>.json: written by the call's journal,
 * lib/workspace/undo-journal.ts; read and applied by lib/run/undo/apply.ts), and the call ids that name
 * records: the format both sides share, kept apart from how the journal takes before-images.
 */
import type { LowerRef } from "../layers/layered-driver.js";

/** The bytes of a version before the call: none (the file did not exist), a pack range, the bytes themselves (base64), or a blob. */
export type Before = null | { etag: string; size: number; lower: LowerRef } | { etag: string; size: number; inline: string } | { etag: string; size: number; blob: string };

export interface UndoChange {
  path: string;
  before: Before;
  /** The etag the call left; null: the call deleted the file. */
  after: string | null;
}

/** A symlink the call made (before null), removed (after null) or repointed: its targets (docs/symlinks.md). */
export interface UndoLinkChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** A file's execute bit the call set (before false) or cleared (after false): x/modes.json, lib/layout/modes.ts. */
export interface UndoModeChange {
  path: string;
  before: boolean;
  after: boolean;
}

/** An explicit directory's marker the call made (before null) or removed (after null): its etags (lib/workspace/markers.ts). */
export interface UndoDirChange {
  path: string;
  before: string | null;
  after: string | null;
}

export interface UndoRecord {
  v: 1;
  call_id: string;
  tool: string;
  session: string;
  at: string;
  changes: UndoChange[];
  /** Link changes (absent: none); a link is not a file object, so it has no before-bytes, only a target. */
  links?: UndoLinkChange[];
  /** Execute-bit changes (absent: none). */
  modes?: UndoModeChange[];
  /** Directory-marker changes (absent: none). */
  dirs?: UndoDirChange[];
}


/** Newest first in key order: the time counted down, fixed width, plus a random tail. */
export function newStamp(now = Date.now()): string {
  const down = (9_999_999_999_999 - now).toString(36).padStart(9, "0");
  const rand = [...crypto.getRandomValues(new Uint8Array(5))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${down}${rand}`;
}
export const stampTime = (stamp: string): number => 9_999_999_999_999 - parseInt(stamp.slice(0, 9), 36);

/** call_id = <session>~<stamp> (a session id never holds "~"): self-contained, so undo needs nothing else. */
export const callIdOf = (session: string, stamp: string): string => `${session}~${stamp}`;
export function parseCallId(id: string): { session: string; stamp: string } | null {
  const m = /^([A-Za-z0-9._:-]{1,128})~([0-9a-z]{9}[0-9a-f]{10})$/.exec(id);
  return m ? { session: m[1]!, stamp: m[2]! } : null;
}

/** The changes a record names: a path left as it was before (written, then put back) is dropped. */
export const recordedOf = (changes: readonly UndoChange[]): UndoChange[] => changes.filter((c) => !(c.before === null && c.after === null) && c.before?.etag !== c.after);
/** The link changes a record names: a link left as it was before is dropped. */
export const recordedLinks = (links: Iterable<UndoLinkChange>): UndoLinkChange[] => [...links].filter((l) => l.before !== l.after);
/** The execute-bit changes a record names: a bit left as it was before is dropped. */
export const recordedModes = (modes: Iterable<UndoModeChange>): UndoModeChange[] => [...modes].filter((m) => m.before !== m.after);
/** The marker changes a record names: a marker made and removed again by the call is dropped. */
export const recordedDirs = (dirs: Iterable<UndoDirChange>): UndoDirChange[] => [...dirs].filter((d) => d.before !== d.after);
