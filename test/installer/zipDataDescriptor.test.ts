/**
 * A stored zip member followed by a data descriptor (general purpose bit 3)
 * must end where a reader of local headers alone ends it (attack review R1).
 * Such a reader (a streaming unzip: libarchive, Node's unzip-stream and
 * unzipper) has no size in the local header, and a stored member has no end
 * of its own, so it ends the member at the first data descriptor signature
 * (PK\x07\x08) it finds. The host reads the central directory's size: a
 * member holding a forged descriptor after a benign first part installed
 * whole, with whatever follows, while a streaming unzip showed the benign part
 * (and took the rest for other members). The checks of the local header
 * skipped every member with a data descriptor. Hand-written archives, as Go's
 * archive/zip and a zip written to a pipe lay out stored members.
 *
 * A deflated member with a data descriptor ends, for such a reader, where its
 * deflate stream ends; inflating (here and in yauzl) ignores any bytes after
 * that end, which such a reader takes for a descriptor and further members:
 * another `index.js`, which its extraction writes last, and the host never
 * installs.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { crc32 } from '../../src/installer/crc32.js';
import { zipFromParts } from './craftArchives.js';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const MANIFEST = Buffer.from(JSON.stringify({ manifest_schema_version: 1, plugin: { id: 'hello' } }));
const DESCRIPTOR = 0x08074b50;

let ws: Workspace;
beforeEach(async () => {
  ws = await workspace();
});
afterEach(async () => {
  await ws.dispose();
});

/**
 * A zip of members each with bit 3 set, zero sizes and CRC in its local header, and a signed data descriptor after
 * its data: stored, or deflated when `packed` (the member's compressed bytes) is given.
 */
function withDescriptors(members: readonly { name: string; data: Buffer; packed?: Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const { name, data, packed = data } of members) {
    const raw = Buffer.from(name);
    const crc = crc32(data);
    const method = packed === data ? 0 : 8;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x8, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(raw.length, 26);
    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(DESCRIPTOR, 0);
    descriptor.writeUInt32LE(crc, 4);
    descriptor.writeUInt32LE(packed.length, 8);
    descriptor.writeUInt32LE(data.length, 12);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x031e, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x8, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(raw.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    const whole = Buffer.concat([local, raw, packed, descriptor]);
    locals.push(whole);
    centrals.push(Buffer.concat([central, raw]));
    offset += whole.length;
  }
  return zipFromParts(locals, centrals);
}

/** A forged data descriptor that ends `benign` for a streaming unzip: its signature, CRC and sizes. */
function forgedEnd(benign: Buffer): Buffer {
  const forged = Buffer.alloc(16);
  forged.writeUInt32LE(DESCRIPTOR, 0);
  forged.writeUInt32LE(crc32(benign), 4);
  forged.writeUInt32LE(benign.length, 8);
  forged.writeUInt32LE(benign.length, 12);
  return forged;
}

const stage = async (bytes: Buffer) => openPackageSource(await ws.file('package.zip', bytes), { stagingRoot: ws.stagingRoot });

describe('a stored zip member with a data descriptor', () => {
  it('is refused when its bytes hold a data descriptor signature, where a streaming unzip would end it', async () => {
    const benign = Buffer.from('export const answer = 42;\n');
    const hidden = Buffer.concat([benign, forgedEnd(benign), Buffer.from('/* what the host would install beyond it */ process.exit(1);\n')]);
    await expectRefused(await stage(withDescriptors([{ name: 'manifest.json', data: MANIFEST }, { name: 'index.js', data: hidden }])), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'header_mismatch',
      entry: 'index.js',
      field: 'data_descriptor',
      local: benign.length,
    });
  });

  it('is refused for a signature past the first read chunk or across two chunks (members over 1 MiB stream)', async () => {
    for (const at of [(1 << 20) + 10, (1 << 20) - 2]) {
      const big = Buffer.alloc(at + 64, 0x20);
      forgedEnd(big.subarray(0, at)).copy(big, at);
      await expectRefused(await stage(withDescriptors([{ name: 'manifest.json', data: MANIFEST }, { name: 'data.bin', data: big }])), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
        reason: 'header_mismatch',
        entry: 'data.bin',
        local: at,
      });
    }
  });

  it('stages as before when no such signature is in its bytes (a zip of Go or one written to a pipe)', async () => {
    const code = Buffer.from('export const answer = 42; // PK but no descriptor\n');
    const big = Buffer.alloc((1 << 20) + 100, 0x50);
    const staged = expectStaged(await stage(withDescriptors([{ name: 'manifest.json', data: MANIFEST }, { name: 'index.js', data: code }, { name: 'big.bin', data: big }])));
    expect(await readFile(join(staged.root, 'index.js'))).toEqual(code);
    expect((await readFile(join(staged.root, 'big.bin'))).equals(big)).toBe(true);
    await staged.discard();
  });
});

/** A stored local header and its data, with no descriptor: what a streaming unzip finds after a forged descriptor. */
function hiddenMember(name: string, data: Buffer): Buffer {
  const raw = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc32(data), 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(raw.length, 26);
  return Buffer.concat([local, raw, data]);
}

describe('a deflated zip member with a data descriptor', () => {
  it('is refused when its deflate stream ends before its bytes do, read whole (small) or streamed (over 1 MiB)', async () => {
    const benign = Buffer.from('export const answer = 42;\n');
    for (const evil of [Buffer.from('process.exit(1);\n'), Buffer.alloc((1 << 20) + 4096, 'process.exit(1);\n')]) {
      const stream = deflateRawSync(evil);
      // After the stream: a descriptor for it, then another index.js, as a streaming unzip would read them.
      const packed = Buffer.concat([stream, forgedEnd(evil).fill(0, 8, 16), hiddenMember('index.js', benign)]);
      await expectRefused(await stage(withDescriptors([{ name: 'manifest.json', data: MANIFEST }, { name: 'index.js', data: evil, packed }])), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
        reason: 'header_mismatch',
        entry: 'index.js',
        field: 'deflate_end',
        central: packed.length,
        local: stream.length,
      });
    }
  });

  it('stages as before when its deflate stream takes all its bytes, small or streamed', async () => {
    const small = Buffer.from('export const answer = 42;\n'.repeat(20));
    const big = Buffer.alloc((1 << 20) + 4096, 'some text that deflates well\n');
    const staged = expectStaged(
      await stage(
        withDescriptors([
          { name: 'manifest.json', data: MANIFEST, packed: deflateRawSync(MANIFEST) },
          { name: 'index.js', data: small, packed: deflateRawSync(small) },
          { name: 'big.txt', data: big, packed: deflateRawSync(big) },
        ]),
      ),
    );
    expect(await readFile(join(staged.root, 'index.js'))).toEqual(small);
    expect((await readFile(join(staged.root, 'big.txt'))).equals(big)).toBe(true);
    await staged.discard();
  });
});
