import { createReadStream } from 'node:fs';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { safeEntryName } from './entryName.js';
import { tarStreamCap, type PackageLimits } from './limits.js';
import { archiveInvalid, limitRefusal, Refusal, refuseEntry, type ArchiveRefusalReason } from './refusal.js';
import type { StagingTree } from './StagingTree.js';

const CHUNK_BYTES = 1024 * 1024;
const MAX_META_ENTRY_BYTES = 64 * 1024;

const REFUSED_TYPES: Readonly<Record<string, ArchiveRefusalReason>> = {
  Link: 'hardlink',
  CharacterDevice: 'device',
  BlockDevice: 'device',
  FIFO: 'fifo',
};

function entryKind(entry: ReadEntry): 'file' | 'directory' | 'symlink' {
  switch (entry.type) {
    case 'SymbolicLink':
      return 'symlink';
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
      return 'directory';
    default:
      return refuseEntry(
        REFUSED_TYPES[entry.type] ?? 'unsupported_type',
        entry.path,
        `tar entry '${entry.path}' is a ${entry.type}; packages hold only files and directories`,
        { type: entry.type },
      );
  }
}

/**
 * The entry's data, ending with the abort's reason once the extraction is
 * aborted. A tar entry destroyed before its consumer started reading never
 * ends or errors when iterated, so the abort must end the iteration.
 */
export async function* chunksUntilAborted(data: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  const chunks = data[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([chunks.next(), aborted]);
      if (next.done === true) return;
      yield next.value;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

async function stageEntry(entry: ReadEntry, tree: StagingTree, signal: AbortSignal): Promise<void> {
  const name = entry.path;
  tree.countEntry(name);
  const kind = entryKind(entry);
  const safe = safeEntryName('tar', name);
  if (kind === 'symlink') {
    const target = entry.linkpath ?? '';
    if (!tree.dropLink(name, safe, target)) {
      refuseEntry('symlink', name, `tar entry '${name}' is a symbolic link to '${target}', outside the package`, { target });
    }
    entry.resume();
    return;
  }
  if (kind === 'directory') {
    if (entry.size > 0) refuseEntry('malformed', name, `tar directory entry '${name}' carries data`);
    await tree.addDirectory(name, safe);
    entry.resume();
    return;
  }
  await tree.addFile(name, safe, ((entry.mode ?? 0) & 0o111) !== 0, entry.size, chunksUntilAborted(entry, signal));
}

/** Counts decompressed bytes and fails the stream once they pass the cap. */
function decompressedCap(limits: PackageLimits): Transform {
  const cap = tarStreamCap(limits);
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      total += chunk.length;
      if (total <= cap) return callback(null, chunk);
      callback(
        limitRefusal(
          'maxExtractedBytes',
          limits.maxExtractedBytes,
          undefined,
          `the tar stream decompresses to more than ${cap} bytes (maxExtractedBytes plus the per-entry header allowance)`,
        ),
      );
    },
  });
}

const malformed = (message: string): Refusal => new Refusal(archiveInvalid('malformed', undefined, message));

/**
 * The refusal of a metadata entry (PAX extended header, GNU long name or long
 * link name) whose text holds a NUL before its end, or `undefined`. The tar
 * library cuts such values at the NUL before the entry they describe is seen,
 * so `a.js\0/../../x` would be staged as `a.js` without this check. A GNU
 * long name ends with NUL padding, which is allowed; a PAX record ends with a
 * newline, so a NUL in any record is never at the end.
 */
function metaNulRefusal(meta: string): Refusal | undefined {
  const text = meta.replace(/\0+$/, '');
  const at = text.indexOf('\0');
  if (at === -1) return undefined;
  // The name as the library would have cut it: for a PAX record, its value up to the NUL.
  const cut = text.slice(text.lastIndexOf('\n', at) + 1, at).replace(/^\d+ [^=]*=/, '');
  return new Refusal(
    archiveInvalid('nul_character', cut, `tar entry '${cut}': its PAX or GNU long name record holds a NUL character, where the name would be cut`),
  );
}

/**
 * Extracts a gzip-compressed tar into the staging tree. Decompression happens
 * here rather than in the tar parser so that every decompressed byte is
 * counted against a cap, including bytes after the end-of-archive marker.
 * The first refused entry aborts the whole extraction; this function returns
 * only once no entry is being written any more.
 */
export async function extractTgz(archive: string, tree: StagingTree, limits: PackageLimits): Promise<void> {
  const abort = new AbortController();
  let failure: unknown;
  let current: ReadEntry | undefined;
  const fail = (cause: unknown): void => {
    if (failure !== undefined) return;
    failure = cause;
    abort.abort();
    current?.destroy();
  };

  const parser = new Parser({ strict: true, brotli: false, zstd: false, maxMetaEntrySize: MAX_META_ENTRY_BYTES });
  let staged: Promise<void> = Promise.resolve();
  let sawEnd = false;
  parser.on('entry', (entry: ReadEntry) => {
    current = entry;
    staged = staged
      .then(async () => {
        if (failure === undefined) await stageEntry(entry, tree, abort.signal);
        else entry.destroy();
      })
      .catch(fail);
  });
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    const reason = entry.meta ? 'malformed' : 'unsupported_type';
    fail(new Refusal(archiveInvalid(reason, entry.path, `tar entry '${entry.path}' (${entry.type}) is not supported`, { type: entry.type })));
  });
  parser.on('meta', (meta: string) => {
    const refused = metaNulRefusal(meta);
    if (refused !== undefined) fail(refused);
  });
  parser.on('eof', () => {
    sawEnd = true;
  });
  parser.on('error', (cause: Error) => fail(malformed(`malformed tar archive: ${cause.message}`)));
  const parsed = new Promise<void>((resolve) => parser.once('end', resolve));

  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (sawEnd || parser.write(chunk)) return callback();
      parser.once('drain', () => callback());
    },
    final(callback) {
      parser.end();
      void parsed.then(() => staged).then(() => callback(), callback);
    },
  });

  try {
    await pipeline(
      createReadStream(archive, { highWaterMark: CHUNK_BYTES }),
      createGunzip(),
      decompressedCap(limits),
      sink,
      { signal: abort.signal },
    );
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    fail(typeof code === 'string' && code.startsWith('Z_') ? malformed(`malformed gzip stream: ${(cause as Error).message}`) : cause);
  }
  await staged;
  if (failure !== undefined) throw failure;
}
