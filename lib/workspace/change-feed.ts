/**
 * Who hears of a Workspace's changes (its listeners: the search index) and how: one by one as
 * they happen, or after the response when the runtime gives `background` (Workers' waitUntil:
 * `changedSoon`, which may hold them a moment to batch a burst of calls), or queued
 * (deferChanges) and handed over as one batch by flush (bulk writers: import, write-back).
 */
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import type { WorkspaceCore as Workspace, WorkspaceListener } from "./workspace-types.js";
import type { FileChange, FileInfo, StagedUpkeep } from "../layout/files.js";

export class ChangeFeed {
  /** Changes not yet told to the listeners (deferChanges), else null. */
  private readonly deferred: FileChange[] | null;
  private deferredBytes = 0;

  constructor(
    private readonly listeners: readonly WorkspaceListener[],
    defer: boolean,
    private readonly background: WaitUntil | undefined,
  ) {
    this.deferred = defer ? [] : null;
  }

  async notify(ws: Workspace, path: string, info: FileInfo | null, content?: Uint8Array): Promise<void> {
    if (this.deferred) {
      this.deferred.push({ path, info, ...(content ? { content } : {}) });
      this.deferredBytes += content?.length ?? 0;
      return;
    }
    if (this.listeners.length === 0) return;
    if (this.background) {
      // After the response; a listener may hold the change to handle it with the next ones.
      const change: FileChange = { path, info, ...(content ? { content } : {}) };
      const tell = () => Promise.all(this.listeners.map((l) => (l.changedSoon ? l.changedSoon(ws, change) : l.changed(ws, path, info, content)))).catch((e) => console.warn("workspace listener failed", e));
      void afterAnswer(this.background, "workspace listener", tell, "skip");
      return;
    }
    for (const l of this.listeners) await l.changed(ws, path, info, content);
  }

  /** Changes queued (files, bytes of content held). */
  get pending(): { files: number; bytes: number } {
    return { files: this.deferred?.length ?? 0, bytes: this.deferredBytes };
  }

  /** Hands the queued changes to every listener as one batch (`staged`: see WorkspaceListener.changedBatch). */
  async flush(ws: Workspace, staged?: StagedUpkeep): Promise<void> {
    const batch = this.deferred?.splice(0) ?? [];
    this.deferredBytes = 0;
    if (batch.length === 0) return;
    for (const l of this.listeners) {
      if (l.changedBatch) await l.changedBatch(ws, batch, staged);
      else for (const c of batch) await l.changed(ws, c.path, c.info, c.content);
    }
  }
}
