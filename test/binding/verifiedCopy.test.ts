/**
 * The private copy a spawn executes: a small pinned file is hashed and copied
 * within the call, before the event loop turns (a spawn on a busy loop paid a
 * turn for every read, write, open, close and unlink), while a large one
 * streams; either way the copy holds exactly the hashed bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyWhileHashing, type VerifiedCopy } from '../../src/binding/verifiedCopy.js';
import copySettings from '../../etc/verified-copy.json' with { type: 'json' };

const base = mkdtempSync(join(tmpdir(), 'verified-copy-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const random = { bytes: (n: number): Uint8Array => randomBytes(n) };

/** Copies a file of `size` random bytes; returns the copy, the source's digest and the copy's size seen right after the call. */
async function copyOf(name: string, size: number): Promise<{ copy: VerifiedCopy; expected: string; sizeWithinCall: number | undefined }> {
  const dir = join(base, name);
  const bytes = randomBytes(size);
  writeFileSync(join(base, `${name}.src`), bytes);
  mkdirSync(dir);
  const source = await open(join(base, `${name}.src`), 'r');
  try {
    const copying = copyWhileHashing(source, dir, random, () => true);
    const inDir = readdirSync(dir);
    const sizeWithinCall = inDir.length === 1 ? statSync(join(dir, inDir[0]!)).size : undefined;
    const copied = (await copying)._unsafeUnwrap();
    if ('refused' in copied) throw new Error('refused');
    return { copy: copied, expected: createHash('sha256').update(bytes).digest('hex'), sizeWithinCall };
  } finally {
    await source.close();
  }
}

describe('copyWhileHashing', () => {
  it('hashes and copies a small file within the call, and hands back the unnamed copy of exactly those bytes', async () => {
    const size = 1_300_000;
    expect(size).toBeLessThanOrEqual(copySettings.synchronousMaxBytes);
    const { copy, expected, sizeWithinCall } = await copyOf('small', size);
    expect(sizeWithinCall).toBe(size);
    expect(copy.sha256).toBe(expected);
    const read = await copy.handle.readFile();
    expect(createHash('sha256').update(read).digest('hex')).toBe(expected);
    expect(readdirSync(join(base, 'small'))).toEqual([]);
    await copy.handle.close();
  });

  it('streams a file larger than the synchronous bound, with the same outcome', async () => {
    const { copy, expected } = await copyOf('large', copySettings.synchronousMaxBytes + 1);
    expect(copy.sha256).toBe(expected);
    expect(createHash('sha256').update(await copy.handle.readFile()).digest('hex')).toBe(expected);
    expect(readdirSync(join(base, 'large'))).toEqual([]);
    await copy.handle.close();
  });

  it('deletes a refused small copy', async () => {
    const dir = join(base, 'refused');
    mkdirSync(dir);
    writeFileSync(join(base, 'refused.src'), randomBytes(4096));
    const source = await open(join(base, 'refused.src'), 'r');
    const copied = (await copyWhileHashing(source, dir, random, () => false))._unsafeUnwrap();
    await source.close();
    expect('refused' in copied && copied.refused).toMatch(/^[0-9a-f]{64}$/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
