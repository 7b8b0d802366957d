import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createInflateRaw, inflateRawSync } from 'node:zlib';
import yauzl, { type Entry, type LocalFileHeader, type ZipFile } from 'yauzl';
import { crc32 } from './crc32.js';
import { safeEntryName, type SafeEntryName } from './entryName.js';
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
const DATA_DESCRIPTOR_FLAG = 0x8;
const ZIP64_MARKER = 0xffffffff;
const ZIP64_EXTRA_FIELD = 0x0001;
/** The optional signature of a data descriptor (APPNOTE 4.3.9.3), which a streaming unzip looks for to end a stored member. */
const DATA_DESCRIPTOR_SIGNATURE = Buffer.from([0x50, 0x4b, 0x07, 0x08]);
const STORED = 0;
const MAX_LINK_TARGET_BYTES = 4096;
const DEFLATED = 8;
/** Members at most this big, packed and unpacked, are read, inflated and written in one piece; bigger ones stream. */
const WHOLE_ENTRY_BYTES = 1 << 20;
/** Bytes a streamed member reads at a time. */
const STREAM_CHUNK_BYTES = 1 << 20;
/** Entries staged between two turns of the event loop (the small ones are staged with synchronous calls). */
const ENTRIES_PER_TURN = 64;

/**
 * Reads the archive with synchronous positioned reads. yauzl's own reader
 * makes a trip to the thread pool for each of the reads an entry takes (its
 * central record, its local header, then its data); for a package of
 * thousands of small files those trips cost more than the reads, and far
 * more when other work keeps the thread pool's threads waiting for a core.
 */
class ArchiveReader extends yauzl.RandomAccessReader {
  constructor(readonly fd: number) {
    super();
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: (err: Error | null, bytesRead?: number) => void): void {
    let bytesRead: number;
    try {
      bytesRead = readFully(this.fd, buffer, offset, length, position);
    } catch (cause) {
      callback(cause as Error);
      return;
    }
    callback(null, bytesRead);
  }

  // Synchronous reads here too: no read is ever in flight on the descriptor when extractZip closes it.
  override _readStreamForRange(start: number, end: number): Readable {
    const fd = this.fd;
    let position = start;
    return new Readable({
      read(this: Readable): void {
        const length = Math.min(STREAM_CHUNK_BYTES, end - position);
        if (length <= 0) {
          this.push(null);
          return;
        }
        const chunk = Buffer.allocUnsafe(length);
        try {
          const n = readFully(fd, chunk, 0, length, position);
          if (n < length) throw new Error('unexpected end of the archive');
          position += n;
          this.push(chunk);
        } catch (cause) {
          this.destroy(cause as Error);
        }
      },
    });
  }
}

/** Reads up to `length` bytes at `position`, stopping early only at the end of the file; returns how many were read. */
function readFully(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, offset + done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/**
 * The bytes of a small member, read and inflated in one piece. Inflating
 * stops at the size the headers declare (`maxOutputLength`), so a member
 * that lies about its size is refused without inflating more than that.
 */
function wholeEntry(reader: ArchiveReader, entry: Entry, local: LocalFileHeader, name: string): Buffer {
  const corrupt = (why: string): never => {
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' is corrupt: ${why}`));
  };
  const packed = Buffer.allocUnsafe(entry.compressedSize);
  if (readFully(reader.fd, packed, 0, packed.length, local.fileDataStart) < packed.length) corrupt('its data ends early');
  let data: Buffer = packed;
  if (entry.compressionMethod !== STORED) {
    try {
      const inflated = inflateRawSync(packed, { maxOutputLength: Math.max(1, entry.uncompressedSize), info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
      data = inflated.buffer;
      if (hasDescriptor(local)) checkDeflateEnd(entry, name, inflated.engine.bytesWritten);
    } catch (cause) {
      if (cause instanceof Refusal) throw cause;
      return corrupt(String(cause));
    }
    if (data.length !== entry.uncompressedSize) corrupt(`it inflates to ${data.length} bytes, its header declares ${entry.uncompressedSize}`);
  }
  if (crc32(data) !== entry.crc32) corrupt(crcMismatch(entry));
  return data;
}

const crcMismatch = (entry: Entry): string => `its data does not match the CRC-32 its headers declare (${entry.crc32.toString(16).padStart(8, '0')})`;

/**
 * The member's bytes as they stream, refused at their end when they do not
 * match the declared CRC-32: yauzl checks sizes, not the CRC, and another
 * unzip would refuse such a member rather than install what it holds.
 */
async function* crcChecked(data: AsyncIterable<Uint8Array>, entry: Entry, name: string): AsyncGenerator<Uint8Array> {
  let crc = 0;
  for await (const chunk of data) {
    crc = crc32(chunk, crc);
    yield chunk;
  }
  if (crc !== entry.crc32) throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' is corrupt: ${crcMismatch(entry)}`));
}

/**
 * The entry's name as the central directory spells it: the Info-ZIP Unicode
 * path field when present, else UTF-8 when flagged, else CP437. Backslashes
 * are kept, so that validation can refuse them.
 */
function entryName(entry: Entry): string {
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, true);
}

function entryKind(entry: Entry, name: string): 'file' | 'directory' | 'symlink' {
  const unixMode = entry.externalFileAttributes >>> 16;
  const type = unixMode & S_IFMT;
  if (type === 0) return name.endsWith('/') ? 'directory' : 'file';
  const kind = FILE_TYPES.get(type) ?? 'unsupported_type';
  if (kind === 'file' || kind === 'directory' || kind === 'symlink') return kind;
  return refuseEntry(kind, name, `zip entry '${name}' is a ${kind}; packages hold only files and directories`, {
    mode: unixMode.toString(8),
  });
}

/** The extra fields of a local header, as yauzl parses those of the central directory. */
function extraFieldsOf(raw: Buffer): { id: number; data: Buffer }[] {
  const fields: { id: number; data: Buffer }[] = [];
  for (let at = 0; at + 4 <= raw.length; ) {
    const size = raw.readUInt16LE(at + 2);
    fields.push({ id: raw.readUInt16LE(at), data: raw.subarray(at + 4, at + 4 + size) });
    at += 4 + size;
  }
  return fields;
}

/**
 * The sizes a local header gives: its own fields, or where one is 0xffffffff
 * the ZIP64 extra field's, which in a local header holds both (uncompressed
 * first, APPNOTE 4.5.3); `null` for a size no field gives.
 */
function localSizes(local: LocalFileHeader): { compressed: number | null; uncompressed: number | null } {
  if (local.compressedSize !== ZIP64_MARKER && local.uncompressedSize !== ZIP64_MARKER) return { compressed: local.compressedSize, uncompressed: local.uncompressedSize };
  const zip64 = extraFieldsOf(local.extraField).find((field) => field.id === ZIP64_EXTRA_FIELD && field.data.length >= 16);
  if (zip64 === undefined) return { compressed: null, uncompressed: null };
  return { uncompressed: Number(zip64.data.readBigUInt64LE(0)), compressed: Number(zip64.data.readBigUInt64LE(8)) };
}

const hasDescriptor = (local: LocalFileHeader): boolean => (local.generalPurposeBitFlag & DATA_DESCRIPTOR_FLAG) !== 0;

/**
 * Refuses a deflated member with a data descriptor whose deflate stream ends
 * before its compressed bytes do (attack review R1). Inflating stops at the
 * stream's end and ignores the rest, here as in yauzl; a reader of local
 * headers alone ends such a member at the stream's end too, and reads the rest
 * as a descriptor and further members (another file of the same name, which
 * its extraction writes last), that the host never installs.
 */
function checkDeflateEnd(entry: Entry, name: string, consumed: number): void {
  if (consumed === entry.compressedSize) return;
  refuseEntry('header_mismatch', name, `zip entry '${name}' has a data descriptor and its deflate stream ends after ${consumed} of its ${entry.compressedSize} bytes: a streaming unzip would read the rest as other members`, {
    field: 'deflate_end',
    central: entry.compressedSize,
    local: consumed,
  });
}

/**
 * How many of a deflated member's bytes its deflate stream takes, inflated
 * once more and the output dropped (only members too big to be read whole),
 * or `undefined` when it cannot be inflated within its declared size: the
 * extraction refuses that one itself.
 */
async function deflateConsumed(fd: number, start: number, length: number, maxOutput: number): Promise<number | undefined> {
  const inflate = createInflateRaw();
  let out = 0;
  const ended = new Promise<number | undefined>((resolve) => {
    inflate.on('data', (chunk: Buffer) => {
      out += chunk.length;
      if (out > maxOutput) {
        inflate.destroy();
        resolve(undefined);
      }
    });
    inflate.on('end', () => resolve(inflate.bytesWritten));
    inflate.on('error', () => resolve(undefined));
    inflate.on('close', () => resolve(undefined));
  });
  const chunk = Buffer.allocUnsafe(Math.min(STREAM_CHUNK_BYTES, Math.max(1, length)));
  for (let at = 0; at < length && !inflate.destroyed && !inflate.writableEnded; ) {
    const n = readFully(fd, chunk, 0, Math.min(chunk.length, length - at), start + at);
    if (n === 0) break;
    at += n;
    // Copied: the chunk is read into again while zlib may still hold it.
    if (!inflate.write(Buffer.from(chunk.subarray(0, n)))) await new Promise((resolve) => inflate.once('drain', resolve));
  }
  if (!inflate.destroyed) inflate.end();
  return ended;
}

/**
 * Where a stored member's bytes hold a data descriptor's signature, if they
 * do: read in chunks that overlap by the signature's length less one.
 */
function descriptorSignatureIn(fd: number, start: number, length: number): number | undefined {
  const overlap = DATA_DESCRIPTOR_SIGNATURE.length - 1;
  const chunk = Buffer.allocUnsafe(Math.min(STREAM_CHUNK_BYTES, length));
  for (let at = 0; at < length; ) {
    const n = readFully(fd, chunk, 0, Math.min(chunk.length, length - at), start + at);
    const found = chunk.subarray(0, n).indexOf(DATA_DESCRIPTOR_SIGNATURE);
    if (found !== -1) return at + found;
    if (n < chunk.length || at + n >= length) return undefined;
    at += n - overlap;
  }
  return undefined;
}

/**
 * Refuses an entry whose local file header disagrees with its central
 * directory record. Tools differ on which of the two they trust (a streaming
 * unzip reads only local headers), so a package whose two views differ would
 * install other files than another tool shows. The sizes and CRC are only in
 * the local header when no data descriptor follows the data (flag bit 3).
 */
async function checkLocalHeader(zip: ZipFile, reader: ArchiveReader, entry: Entry, name: string): Promise<LocalFileHeader> {
  const local = await zip.readLocalFileHeaderPromise(entry).catch((cause: unknown) => {
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' has no readable local header: ${String(cause)}`));
  });
  const mismatch = (field: string, central: unknown, inLocal: unknown): never =>
    refuseEntry('header_mismatch', name, `zip entry '${name}': its local header disagrees with the central directory on ${field}`, {
      field,
      central,
      local: inLocal,
    });
  const localName = yauzl.getFileNameLowLevel(local.generalPurposeBitFlag, local.fileName, extraFieldsOf(local.extraField), true);
  if (!local.fileName.equals(entry.fileNameRaw) || localName !== name) mismatch('name', name, localName);
  if (local.compressionMethod !== entry.compressionMethod) mismatch('compression_method', entry.compressionMethod, local.compressionMethod);
  if ((local.generalPurposeBitFlag & ENCRYPTED_FLAG) !== (entry.generalPurposeBitFlag & ENCRYPTED_FLAG)) {
    mismatch('encryption', entry.generalPurposeBitFlag & ENCRYPTED_FLAG, local.generalPurposeBitFlag & ENCRYPTED_FLAG);
  }
  if ((local.generalPurposeBitFlag & DATA_DESCRIPTOR_FLAG) !== 0) {
    // A reader of local headers alone learns where a stored member with a data descriptor ends only by finding the
    // descriptor's signature: one inside the data would end the member there for it, and it would take the rest (the
    // installed file's own bytes) for other members (attack review R1). A deflated member's end is its stream's.
    if (local.compressionMethod === STORED) {
      const at = descriptorSignatureIn(reader.fd, local.fileDataStart, entry.compressedSize);
      if (at !== undefined) {
        refuseEntry('header_mismatch', name, `zip entry '${name}' is stored with a data descriptor and holds a data descriptor's signature at byte ${at}: a streaming unzip would end it there`, {
          field: 'data_descriptor',
          central: entry.compressedSize,
          local: at,
        });
      }
    }
    return local;
  }
  // ZIP64 entries carry 0xffffffff here and their sizes in the local ZIP64 extra field, which a reader of local headers
  // alone (a streaming unzip) takes: it must give the central directory's sizes too, or that reader sees other data.
  const sizes = localSizes(local);
  if (sizes.compressed !== entry.compressedSize) mismatch('compressed_size', entry.compressedSize, sizes.compressed);
  if (sizes.uncompressed !== entry.uncompressedSize) mismatch('uncompressed_size', entry.uncompressedSize, sizes.uncompressed);
  if (local.crc32 !== entry.crc32) mismatch('crc32', entry.crc32, local.crc32);
  return local;
}

/** A zip symbolic link stores its target as its data: read it (it is short) and drop the link, or refuse one that leaves the package. */
async function stageLink(name: string, safe: SafeEntryName, entry: Entry, data: Readable, tree: StagingTree): Promise<void> {
  data.on('error', () => undefined);
  if (entry.uncompressedSize > MAX_LINK_TARGET_BYTES) refuseEntry('malformed', name, `zip entry '${name}' is a symbolic link with a target over ${MAX_LINK_TARGET_BYTES} bytes`);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of data) chunks.push(chunk as Buffer);
  } catch (cause) {
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' is corrupt: ${String(cause)}`));
  } finally {
    data.destroy();
  }
  const target = Buffer.concat(chunks).toString('utf8');
  if (!tree.dropLink(name, safe, target)) {
    refuseEntry('symlink', name, `zip entry '${name}' is a symbolic link to '${target}', outside the package`, { target });
  }
}

async function stageEntry(zip: ZipFile, reader: ArchiveReader, entry: Entry, tree: StagingTree): Promise<void> {
  const name = entryName(entry);
  tree.countEntry(name);
  const kind = entryKind(entry, name);
  const safe = safeEntryName('zip', name);
  const local = await checkLocalHeader(zip, reader, entry, name);
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
  if (kind === 'file' && entry.compressedSize <= WHOLE_ENTRY_BYTES && entry.uncompressedSize <= WHOLE_ENTRY_BYTES) {
    tree.writeFile(name, safe, executable, entry.uncompressedSize, () => wholeEntry(reader, entry, local, name));
    return;
  }
  if (local.compressionMethod === DEFLATED && hasDescriptor(local)) {
    const consumed = await deflateConsumed(reader.fd, local.fileDataStart, entry.compressedSize, entry.uncompressedSize);
    if (consumed !== undefined) checkDeflateEnd(entry, name, consumed);
  }
  const data = await zip.openReadStreamPromise(entry).catch((cause: unknown) => {
    throw new Refusal(archiveInvalid('malformed', name, `zip entry '${name}' cannot be read: ${String(cause)}`));
  });
  if (kind === 'symlink') {
    await stageLink(name, safe, entry, data, tree);
    return;
  }
  // The first error reaches addFile through iteration; yauzl can emit another
  // after the iterator has let go, which must not become an uncaught exception.
  data.on('error', () => undefined);
  try {
    await tree.addFile(name, safe, executable, entry.uncompressedSize, crcChecked(data, entry, name));
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
  const fd = openSync(archive, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const reader = new ArchiveReader(fd);
    const zip = await yauzl
      .fromRandomAccessReaderPromise(reader, fstatSync(fd).size, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: true })
      .catch((cause: unknown) => {
        throw new Refusal(archiveInvalid('malformed', undefined, `malformed zip archive: ${String(cause)}`));
      });
    await stageEntries(zip, reader, tree, limits);
  } finally {
    closeSync(fd);
  }
}

async function stageEntries(zip: ZipFile, reader: ArchiveReader, tree: StagingTree, limits: PackageLimits): Promise<void> {
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
      await stageEntry(zip, reader, next.value, tree);
      if (tree.entryCount % ENTRIES_PER_TURN === 0) await nextTurn();
    }
  } finally {
    zip.close();
  }
}
