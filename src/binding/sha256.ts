/**
 * Streaming SHA-256 over an open file descriptor. Reads are 1 MiB and
 * double-buffered: the next read runs in libuv's thread pool while the
 * current chunk is hashed, which is what brings a streamed digest close to
 * the speed of hashing bytes already in memory.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';

/** Read size of every streamed digest. */
const HASH_CHUNK_BYTES = 1 << 20;

/** Receives each hashed chunk, in order, before the next one is hashed. */
export type ChunkSink = (chunk: Buffer) => Promise<void>;

/**
 * The SHA-256 (lower-case hex) of everything readable from `file` starting
 * at offset 0. When `sink` is given, every chunk that went into the digest is
 * handed to it, so a copy written by the sink holds exactly the hashed bytes.
 */
export async function sha256OfHandle(file: FileHandle, sink?: ChunkSink): Promise<string> {
  const hash = createHash('sha256');
  // Three buffers: one being hashed, one being read into, one still owned by the sink's pending write.
  const buffers = [Buffer.allocUnsafe(HASH_CHUNK_BYTES), Buffer.allocUnsafe(HASH_CHUNK_BYTES), Buffer.allocUnsafe(HASH_CHUNK_BYTES)];
  let position = 0;
  let turn = 0;
  let pendingSink: Promise<void> = Promise.resolve();
  let nextRead = file.read(buffers[0]!, 0, HASH_CHUNK_BYTES, position);
  try {
    for (;;) {
      const { bytesRead, buffer } = await nextRead;
      if (bytesRead === 0) break;
      position += bytesRead;
      turn = (turn + 1) % buffers.length;
      nextRead = file.read(buffers[turn]!, 0, HASH_CHUNK_BYTES, position);
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      if (sink) {
        await pendingSink;
        pendingSink = sink(chunk);
      }
    }
    await pendingSink;
  } catch (error) {
    // Let an in-flight read settle before the caller closes the handle.
    await Promise.allSettled([nextRead, pendingSink]);
    throw error;
  }
  return hash.digest('hex');
}

/** Whether `value` is a SHA-256 digest as the lock records it: 64 lower-case hex digits. */
export function isSha256Hex(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}

/** Whether two hex digests are equal, compared in constant time. */
export function digestsEqual(expectedHex: string, actualHex: string): boolean {
  const expected = Buffer.from(expectedHex, 'hex');
  const actual = Buffer.from(actualHex, 'hex');
  if (expected.length !== 32 || actual.length !== 32) return false;
  return timingSafeEqual(expected, actual);
}
