import { createHash, timingSafeEqual } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { refuseEntry, refuseLimit } from './refusal.js';
import { writeAll } from './writeAll.js';

/** A package digest in its one canonical spelling: `sha256:` and 64 lowercase hex digits. */
export type PackageDigest = `sha256:${string}`;

const CHECKSUM = /^(?:sha256:)?([0-9a-fA-F]{64})$/;
const CHUNK_BYTES = 1024 * 1024;

/**
 * Parses a checksum as written in `[package].checksum` or passed by a caller:
 * `sha256:<hex>` or bare hex, 64 digits, any case. Other algorithms are refused
 * with `PLUGIN_CHECKSUM_MISMATCH` (`details.reason: "malformed"`), since a
 * checksum the host cannot check must not be mistaken for one that passed.
 */
export function parseChecksum(text: string): Result<PackageDigest, HostError> {
  const match = CHECKSUM.exec(text.trim());
  if (match?.[1] === undefined) {
    return err(
      hostError('PLUGIN_CHECKSUM_MISMATCH', `checksum '${text}' is not sha256:<64 hex digits>`, {
        details: { reason: 'malformed', expected: text },
      }),
    );
  }
  const digest: PackageDigest = `sha256:${match[1].toLowerCase()}`;
  return ok(digest);
}

/** Whether two canonical digests are equal, compared in constant time. */
export function digestsEqual(a: PackageDigest, b: PackageDigest): boolean {
  const x = Buffer.from(a.slice('sha256:'.length), 'hex');
  const y = Buffer.from(b.slice('sha256:'.length), 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What {@link copyAndHash} saw of the archive. */
export interface HashedCopy {
  /** SHA-256 of exactly the bytes copied. */
  readonly digest: PackageDigest;
  /** Bytes copied. */
  readonly bytes: number;
  /** The first bytes of the file, for format detection. */
  readonly head: Buffer;
}

/**
 * Copies the archive into the private staging directory while hashing it, in
 * 1 MiB chunks, refusing it once it passes `maxBytes`. Later steps read only
 * the copy, so the bytes that are extracted are the bytes that were hashed,
 * even if the original changes meanwhile.
 */
export async function copyAndHash(source: string, target: string, maxBytes: number): Promise<HashedCopy> {
  const input = await open(source, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await input.stat();
    if (!stat.isFile()) refuseEntry('not_a_file', undefined, `package source '${source}' is not a regular file`);
    if (stat.size > maxBytes) {
      refuseLimit('maxArchiveBytes', maxBytes, undefined, `archive is ${stat.size} bytes, over the ${maxBytes}-byte limit`);
    }
    const output = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      const hash = createHash('sha256');
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let head = Buffer.alloc(0);
      let bytes = 0;
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, CHUNK_BYTES, null);
        if (bytesRead === 0) break;
        bytes += bytesRead;
        if (bytes > maxBytes) {
          refuseLimit('maxArchiveBytes', maxBytes, undefined, `archive is over the ${maxBytes}-byte limit`);
        }
        const chunk = buffer.subarray(0, bytesRead);
        if (head.length < 8) head = Buffer.concat([head, chunk.subarray(0, 8 - head.length)]);
        hash.update(chunk);
        await writeAll(output, chunk);
      }
      return { digest: `sha256:${hash.digest('hex')}`, bytes, head };
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
}
