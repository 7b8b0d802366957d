/**
 * The generation protocol on disk.
 *
 * Publish (under the profile lock): write each file's next generation to
 * `<name>.next` (mode 0600, fsynced), fsync the directory, rename the three
 * `.next` files over the live names, fsync the directory.
 *
 * Read: if the three live files carry the same (install_generation, txid),
 * that is the generation. Otherwise a publish is in flight or was killed
 * during its renames; since every `.next` was durable before the first
 * rename, each file then has the new generation either live or as `.next`,
 * and the generation the live catalog names (renamed first, so it names
 * the publish that began) is chosen when the other two files have it live
 * or as `.next` (roll forward). Stray `.next` files next to agreeing live
 * files are a transaction killed before its first rename (roll back).
 *
 * A generation found only as `.next` files is never chosen: no rename of it
 * has begun, so it may still be rolled back. A reader without the lock can
 * meet one beside live files of the publish before it (it read those live
 * files, the publish finished and the next transaction wrote its `.next`
 * files before the reader listed them); choosing it would show a generation
 * that the next read, finding the live files agreeing, takes back.
 */
import { isAscii } from 'node:buffer';
import type { BigIntStats } from 'node:fs';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { open, readdir, readFile, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import type { EncodedFile } from './CatalogEncoder.js';
import { CATALOG_FILE_KINDS, fileName, nextFileName, parseFile, type CatalogFileData, type CatalogFileKind } from './catalogFiles.js';
import { errnoOf } from '../errors/ioError.js';

/** One file's content as read from one name. */
export interface FileVersion<K extends CatalogFileKind = CatalogFileKind> {
  /** Where it was read from; `absent` stands for a live file that does not exist yet (generation 0). */
  readonly origin: 'live' | 'next' | 'absent';
  /** Generation and txid, `<gen>:<txid>`. */
  readonly key: string;
  /** Its generation. */
  readonly generation: number;
  /** Parsed content (undefined for `absent`). */
  readonly data: CatalogFileData[K] | undefined;
}

/** The three files of one generation. */
export type GenerationFiles = { readonly [K in CatalogFileKind]: FileVersion<K> };

/** A consistent generation, and whether the live names must be repaired to show it. */
export interface SelectedGeneration {
  /** The files of the generation. */
  readonly files: GenerationFiles;
  /** Whether some live file is not of this generation, or stray `.next` files exist. */
  readonly needsRepair: boolean;
}

/** Parsed live files cached by file identity, so an unchanged file is not parsed again. */
export type ParseCache = Map<CatalogFileKind, { readonly identity: string; readonly version: FileVersion }>;

const keyOf = (data: { install_generation: number; txid: string }): string => `${data.install_generation}:${data.txid}`;

const identityOf = (s: BigIntStats): string => `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;

/**
 * A descriptor on the live file of `kind` as it is now (read-only,
 * close-on-exec), and its identity as the parse cache records it; undefined
 * when it cannot be opened. A publish renames a new file over the name, so
 * the file this descriptor holds then has no link left: a watcher needs one
 * `fstat` of it to know whether another generation may be live.
 */
export function openLiveFileSync(dir: string, kind: CatalogFileKind): { readonly fd: number; readonly identity: string } | undefined {
  let fd: number;
  try {
    fd = openSync(join(dir, fileName(kind)), 'r');
  } catch {
    return undefined;
  }
  try {
    return { fd, identity: identityOf(fstatSync(fd, { bigint: true })) };
  } catch {
    closeSync(fd);
    return undefined;
  }
}

function versionOf<K extends CatalogFileKind>(origin: 'live' | 'next', data: CatalogFileData[K]): FileVersion<K> {
  return { origin, key: keyOf(data), generation: data.install_generation, data };
}

const ABSENT: FileVersion = { origin: 'absent', key: '0:', generation: 0, data: undefined };

/**
 * Reads a live file. A file this cache already holds is recognised by a stat
 * of its name; any other is read through one descriptor (identity and bytes
 * of the same inode).
 */
async function readLive(dir: string, kind: CatalogFileKind, cache: ParseCache): Promise<Result<FileVersion, HostError>> {
  const path = join(dir, fileName(kind));
  const cached = cache.get(kind);
  if (cached !== undefined) {
    try {
      if (identityOf(await stat(path, { bigint: true })) === cached.identity) return ok(cached.version);
    } catch (e) {
      if (errnoOf(e) === 'ENOENT') return ok(ABSENT);
      return err(ioError('Reading', path, e));
    }
  }
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return ok(ABSENT);
    return err(ioError('Opening', path, e));
  }
  try {
    const stats = await handle.stat({ bigint: true });
    const identity = identityOf(stats);
    if (cached?.identity === identity) return ok(cached.version);
    const text = await readText(handle, Number(stats.size));
    const parsed = parseFile(kind, text, path);
    if (parsed.isErr()) return err(parsed.error);
    const version = versionOf('live', parsed.value);
    cache.set(kind, { identity, version });
    return ok(version);
  } catch (e) {
    return err(ioError('Reading', path, e));
  } finally {
    await handle.close();
  }
}

/**
 * The whole file as text. Pure ASCII, which the host's own encoder writes
 * unless a value holds other characters, is decoded as Latin-1: the same
 * string, made by a copy instead of a UTF-8 decode.
 */
async function readText(handle: FileHandle, size: number): Promise<string> {
  const bytes = await readBytes(handle, size);
  return bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
}

/** The whole file, read into one buffer sized by its stat (grown if the file grew meanwhile). */
async function readBytes(handle: FileHandle, size: number): Promise<Buffer> {
  let buffer = Buffer.allocUnsafe(size + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) buffer = Buffer.concat([buffer, Buffer.allocUnsafe(buffer.length)]);
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  return buffer.subarray(0, length);
}

/**
 * The live file of `kind` read again, when it is still the very file
 * `cache` parsed (same identity) and pure ASCII: its bytes and what they
 * parsed to, for the encoder to copy unchanged entries from. Undefined
 * otherwise, or when it cannot be read: the encoder then stringifies. The
 * bytes are read when they are needed, not kept from the parse: a process
 * that seldom writes the catalog would hold the files' text for nothing.
 */
export async function readLiveSource(dir: string, kind: CatalogFileKind, cache: ParseCache): Promise<{ bytes: Buffer; data: CatalogFileData[CatalogFileKind] } | undefined> {
  const cached = cache.get(kind);
  const data = cached?.version.origin === 'live' ? cached.version.data : undefined;
  if (cached === undefined || data === undefined) return undefined;
  let handle;
  try {
    handle = await open(join(dir, fileName(kind)), 'r');
    const stats = await handle.stat({ bigint: true });
    if (identityOf(stats) !== cached.identity) return undefined;
    const bytes = await readBytes(handle, Number(stats.size));
    return isAscii(bytes) ? { bytes, data } : undefined;
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/**
 * Reads a `.next` file: `undefined` when there is none; `invalid` when its
 * write was cut short (it never counts as a generation, but is a leftover).
 */
async function readNext(dir: string, kind: CatalogFileKind): Promise<FileVersion | 'invalid' | undefined> {
  const path = join(dir, nextFileName(kind));
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    return errnoOf(e) === 'ENOENT' ? undefined : 'invalid';
  }
  const parsed = parseFile(kind, text, path);
  return parsed.isOk() ? versionOf('next', parsed.value) : 'invalid';
}

/** The outcome of one read: a generation, or none found (a publish moved on meanwhile, or the files disagree). */
export type ReadOutcome = { readonly selected: SelectedGeneration } | { readonly disagreement: Readonly<Record<CatalogFileKind, string[]>> };

/** Reads the newest consistent generation of the files in `dir`. */
export async function readGeneration(dir: string, cache: ParseCache): Promise<Result<ReadOutcome, HostError>> {
  const lives: Partial<Record<CatalogFileKind, FileVersion>> = {};
  // Read concurrently: one file's bytes arrive while another is parsed.
  const read = await Promise.all(CATALOG_FILE_KINDS.map((kind) => readLive(dir, kind, cache)));
  for (const [i, kind] of CATALOG_FILE_KINDS.entries()) {
    const live = read[i]!;
    if (live.isErr()) return err(live.error);
    lives[kind] = live.value;
  }
  const live = lives as Record<CatalogFileKind, FileVersion>;
  const nexts: Partial<Record<CatalogFileKind, FileVersion>> = {};
  let strayNext = false;
  // One listing instead of a failed open per file: most reads find no `.next` file.
  let names: ReadonlySet<string>;
  try {
    names = new Set(await readdir(dir));
  } catch (e) {
    return err(ioError('Reading', dir, e));
  }
  for (const kind of CATALOG_FILE_KINDS) {
    const next = names.has(nextFileName(kind)) ? await readNext(dir, kind) : undefined;
    if (next !== undefined) strayNext = true;
    if (next !== undefined && next !== 'invalid') nexts[kind] = next;
  }
  if (live.catalog.key === live.lock.key && live.lock.key === live.state.key) {
    return ok({ selected: { files: live as GenerationFiles, needsRepair: strayNext } });
  }
  const options = (kind: CatalogFileKind): FileVersion[] => [live[kind], ...(nexts[kind] ? [nexts[kind]] : [])];
  const lock = options('lock').find((v) => v.key === live.catalog.key);
  const state = options('state').find((v) => v.key === live.catalog.key);
  if (lock && state) return ok({ selected: { files: { catalog: live.catalog, lock, state } as GenerationFiles, needsRepair: true } });
  return ok({
    disagreement: {
      catalog: options('catalog').map((v) => `${v.origin} ${v.key}`),
      lock: options('lock').map((v) => `${v.origin} ${v.key}`),
      state: options('state').map((v) => `${v.origin} ${v.key}`),
    },
  });
}

async function writeDurably(path: string, file: EncodedFile): Promise<void> {
  await unlink(path).catch((e: unknown) => (errnoOf(e) === 'ENOENT' ? undefined : Promise.reject(e)));
  const handle = await open(path, 'wx', 0o600);
  try {
    // libuv repeats writev until every chunk is written; a shortfall here means the disk refused the rest.
    const { bytesWritten } = await handle.writev(file.chunks);
    if (bytesWritten !== file.byteLength) throw Object.assign(new Error(`short write: ${bytesWritten} of ${file.byteLength} bytes`), { code: 'EIO' });
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the creations, renames and unlinks in a directory durable (fsync of the directory itself). */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the live names show `selected` and removes stray `.next` files. Run under the profile lock. */
export async function repairGeneration(dir: string, selected: GenerationFiles): Promise<Result<void, HostError>> {
  try {
    for (const kind of CATALOG_FILE_KINDS) {
      const next = join(dir, nextFileName(kind));
      if (selected[kind].origin === 'next') await rename(next, join(dir, fileName(kind)));
      else await unlink(next).catch((e: unknown) => (errnoOf(e) === 'ENOENT' ? undefined : Promise.reject(e)));
    }
    await syncDirectory(dir);
    return ok(undefined);
  } catch (e) {
    return err(ioError('Recovering the catalog in', dir, e));
  }
}

/**
 * Publishes one generation: `.next` files written and fsynced, directory
 * fsynced, renamed, directory fsynced. Records the published files in
 * `cache`, so the next transaction of this process does not parse them again.
 *
 * With `holdCatalog`, returns a read-only, close-on-exec descriptor on the
 * catalog file it published, opened through its `.next` name before the
 * rename: the very inode published, whatever the live name shows by the
 * time the caller looks (a reader that later opened the path and compared
 * identities could be fooled by a reused inode number with coarse
 * timestamps). The caller owns it.
 */
export async function publishGeneration(
  dir: string,
  files: { readonly [K in CatalogFileKind]: { readonly encoded: EncodedFile; readonly data: CatalogFileData[K] } },
  cache: ParseCache,
  options: { readonly holdCatalog?: boolean } = {},
): Promise<Result<number | undefined, HostError>> {
  let current = dir;
  let held: number | undefined;
  try {
    // The three files are written and fsynced concurrently: their fsyncs can share one journal commit.
    await Promise.all(CATALOG_FILE_KINDS.map((kind) => writeDurably(join(dir, nextFileName(kind)), files[kind].encoded)));
    current = dir;
    await syncDirectory(dir);
    if (options.holdCatalog === true) {
      current = join(dir, nextFileName('catalog'));
      // libuv opens every file close-on-exec, so no plugin process inherits it.
      held = openSync(current, 'r');
    }
    for (const kind of CATALOG_FILE_KINDS) {
      current = join(dir, fileName(kind));
      await rename(join(dir, nextFileName(kind)), current);
    }
    current = dir;
    await syncDirectory(dir);
    for (const kind of CATALOG_FILE_KINDS) {
      current = join(dir, fileName(kind));
      // Under the lock nobody else renames these names, so this identity is the file just written.
      const stats = kind === 'catalog' && held !== undefined ? fstatSync(held, { bigint: true }) : await stat(current, { bigint: true });
      cache.set(kind, { identity: identityOf(stats), version: versionOf('live', files[kind].data) });
    }
    return ok(held);
  } catch (e) {
    if (held !== undefined) closeSync(held);
    return err(ioError('Publishing', current, e));
  }
}
