import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { safeEntryName } from './entryName.js';
import type { PackageLimits } from './limits.js';
import { archiveInvalid, Refusal, refuseEntry, refuseLimit, type ArchiveRefusalReason } from './refusal.js';
import type { StagingTree } from './StagingTree.js';

const S_IFMT = 0o170000;
const FILE_TYPES: ReadonlyMap<number, 'file' | 'directory' | ArchiveRefusalReason> = new Map([
  [0o100000, 'file'],
  [0o040000, 'directory'],
  [0o120000, 'symlink'],
  [0o020000, 'device'],
  [0o060000, 'device'],
  [0o010000, 'fifo'],
  [0o140000, 'socket'],
] as const);
const ENCRYPTED_FLAG = 0x1;
const STORED = 0;
const DEFLATED = 8;

/**
 * The entry's name as the central directory spells it: the Info-ZIP Unicode
 * path field when present, else UTF-8 when flagged, else CP437. Backslashes
 * are kept, so that validation can refuse them.
 */
function entryName(entry: Entry): string {
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true);
}

function entryKind(entry: Entry, name: string): 'file' | 'directory' {
  const unixMode = entry.externalFileAttributes >>> 16;
  const type = unixMode & S_IFMT;
  if (type === 0) return name.endsWith('/') ? 'directory' : 'file';
  const kind = FILE_TYPES.get(type) ?? 'unsupported_type';
  if (kind === 'file' || kind === 'directory') return kind;
  return refuseEntry(kind, name, `zip entry '${name}' is a ${kind}; packages hold only files and directories`, {
    mode: unixMode.toString(8),
  });
}

async function stageEntry(zip: ZipFile, entry: Entry, tree: StagingTree): Promise<void> {
  const name = entryName(entry);
  tree.countEntry(name);
  const kind = entryKind(entry, name);
  const safe = safeEntryName('zip', name);
  if ((entry.generalPurposeBitFlag & ENCRYPTED_FLAG) !== 0) refuseEntry('encrypted', name, `zip entry '${name}' is encrypted`);
  if (kind === 'directory') {
    if (entry.uncompressedSize > 0) refuseEntry('malformed', name, `zip directory entry '${name}' carries data`);
    await tree.addDirectory(name, safe);
    return;
  }
  if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
    refuseEntry('unsupported_compression', name, `zip entry '${name}' uses compression method ${entry.compressionMethod}`, {
      method: entry.compressionMethod,
    });
  }
  const executable = ((entry.externalFileAttributes >>> 16) & 0o111) !== 0;
  const data = await zip.openReadStreamPromise(entry).catch((cause: unknown) => {
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' cannot be read: ${String(cause)}`));
  });
  // The first error reaches addFile through iteration; yauzl can emit another
  // after the iterator has let go, which must not become an uncaught exception.
  data.on('error', () => undefined);
  try {
    await tree.addFile(name, safe, executable, entry.uncompressedSize, data);
  } catch (cause) {
    // yauzl reports a deflate stream that lies about its size, or a bad CRC, as a stream error.
    if (cause instanceof Refusal || (cause as NodeJS.ErrnoException).syscall !== undefined) throw cause;
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' is corrupt: ${String(cause)}`));
  } finally {
    data.destroy();
  }
}

/**
 * Extracts a zip archive into the staging tree, reading the central directory
 * lazily, one entry at a time. Names are decoded here rather than by yauzl so
 * that a refused name is reported with the entry it belongs to.
 */
export async function extractZip(archive: string, tree: StagingTree, limits: PackageLimits): Promise<void> {
  const zip = await yauzl
    .openPromise(archive, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: true })
    .catch((cause: unknown) => {
      throw new Refusal(archiveInvalid('malformed', undefined, `malformed zip archive: ${String(cause)}`));
    });
  try {
    if (zip.entryCount > limits.maxEntries) {
      refuseLimit('maxEntries', limits.maxEntries, undefined, `zip archive lists ${zip.entryCount} entries, over the ${limits.maxEntries}-entry limit`);
    }
    const entries = zip.eachEntry();
    for (;;) {
      const next = await entries.next().catch((cause: unknown) => {
        throw new Refusal(archiveInvalid('malformed', undefined, `malformed zip archive: ${String(cause)}`));
      });
      if (next.done === true) break;
      await stageEntry(zip, next.value, tree);
    }
  } finally {
    zip.close();
  }
}
