/**
 * Bounds of one import or export. Each is checked before the bytes it guards are read or
 * written; a call past one answers PAYLOAD_TOO_LARGE with the bound in `details`.
 * Deployments change them through AppDeps.archiveLimits.
 */
export interface ArchiveLimits {
  /** Entries of any kind (files, directories, links, ...) in one archive. */
  maxEntries: number;
  /** Sum of the declared sizes of every entry (skipped ones included: skipping reads them). */
  maxTotalBytes: number;
  /** Declared size of one entry. */
  maxFileBytes: number;
  /** The archive as sent (compressed): zip bodies are spooled to storage up to this size. */
  maxArchiveBytes: number;
  /** A raw entry name, before it becomes a workspace path (which has its own 768-byte bound). */
  maxNameBytes: number;
  /** One pax extended header or GNU long name record. */
  maxMetaBytes: number;
  /** gzip: decompressed bytes per compressed byte, checked once past `ratioFloorBytes`. */
  maxRatio: number;
  ratioFloorBytes: number;
  /** Files one export lists (the listing is kept in memory to compute its ETag). */
  maxExportFiles: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxEntries: 200_000,
  maxTotalBytes: 2 * 1024 ** 3,
  maxFileBytes: 1024 ** 3,
  maxArchiveBytes: 2 * 1024 ** 3,
  maxNameBytes: 4096,
  maxMetaBytes: 64 * 1024,
  maxRatio: 250,
  ratioFloorBytes: 64 * 1024 ** 2,
  maxExportFiles: 200_000,
};

export const archiveLimits = (over: Partial<ArchiveLimits> = {}): ArchiveLimits => ({ ...DEFAULT_ARCHIVE_LIMITS, ...over });
