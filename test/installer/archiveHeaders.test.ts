/**
 * What an archive says about an entry in more than one place must agree:
 * a PAX or GNU long-name record cut at a NUL, or a zip local header naming
 * another file than the central directory, is refused rather than staged
 * under whichever name the parser happened to keep.
 */
import { readdir } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { crc32 } from '../../src/installer/crc32.js';
import { patchLocalHeader, paxHeader, tgzOf, zipFromParts, zipOf, type TarMember } from './craftArchives.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const MANIFEST = JSON.stringify({ manifest_schema_version: 1, plugin: { id: 'hello' } });

let ws: Workspace;
beforeEach(async () => {
  ws = await workspace();
});
afterEach(async () => {
  await ws.dispose();
});

const stage = async (name: string, bytes: Buffer) => openPackageSource(await ws.file(name, bytes), { stagingRoot: ws.stagingRoot });
const refusedTgz = async (members: readonly TarMember[], details: Record<string, unknown>) =>
  expectRefused(await stage('hostile.tgz', tgzOf(members)), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', details);

describe('NUL characters in tar metadata records', () => {
  it('refuses a PAX path holding a NUL (the tar library would stage it as the name cut at the NUL)', async () => {
    await refusedTgz(
      [
        { path: 'manifest.json', data: MANIFEST },
        paxHeader({ path: 'evil.js\0/../../../escape.js' }),
        { path: 'placeholder.js', data: 'x' },
      ],
      { reason: 'nul_character', entry: 'evil.js' },
    );
  });

  it('refuses a PAX linkpath holding a NUL', async () => {
    await refusedTgz(
      [{ path: 'manifest.json', data: MANIFEST }, paxHeader({ linkpath: 'target\0x' }), { path: 'data.bin', data: 'x' }],
      { reason: 'nul_character', entry: 'target' },
    );
  });

  it('refuses a GNU long name holding a NUL before its end', async () => {
    await refusedTgz(
      [
        { path: 'manifest.json', data: MANIFEST },
        { path: '././@LongLink', type: 'NextFileHasLongPath', data: 'evil.js\0../../x\0' },
        { path: 'placeholder.js', data: 'x' },
      ],
      { reason: 'nul_character', entry: 'evil.js' },
    );
  });

  it('still stages a GNU long name that only ends with its NUL terminator, and a clean PAX path', async () => {
    const long = `${'d'.repeat(120)}.js`;
    const staged = expectStaged(
      await stage(
        'clean.tgz',
        tgzOf([
          { path: 'manifest.json', data: MANIFEST },
          { path: '././@LongLink', type: 'NextFileHasLongPath', data: `${long}\0` },
          { path: 'short-placeholder.js', data: 'a' },
          paxHeader({ path: 'from-pax.js' }),
          { path: 'other-placeholder.js', data: 'b' },
        ]),
      ),
    );
    expect((await readdir(staged.root)).sort()).toEqual([long, 'from-pax.js', 'manifest.json'].sort());
    await staged.discard();
  });

  it('refuses a zip entry name holding a NUL', async () => {
    const zip = await zipOf([
      { name: 'manifest.json', data: MANIFEST },
      { name: 'evil.js\0/x', data: 'x' },
    ]);
    await expectRefused(await stage('nul.zip', zip), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', { reason: 'nul_character' });
  });
});

describe('zip local headers that disagree with the central directory', () => {
  const twoFiles = () =>
    zipOf([
      { name: 'manifest.json', data: MANIFEST },
      { name: 'aaaa.js', data: 'console.log(1)\n', compress: false },
    ]);

  it('stages the unpatched archive', async () => {
    const staged = expectStaged(await stage('plain.zip', await twoFiles()));
    expect((await readdir(staged.root)).sort()).toEqual(['aaaa.js', 'manifest.json']);
    await staged.discard();
  });

  it('refuses a local header naming another file', async () => {
    const zip = patchLocalHeader(await twoFiles(), 1, { name: 'bbbb.js' });
    await expectRefused(await stage('names.zip', zip), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'header_mismatch',
      entry: 'aaaa.js',
      field: 'name',
      local: 'bbbb.js',
    });
  });

  it('refuses a local header with another compression method', async () => {
    const zip = patchLocalHeader(await twoFiles(), 1, { method: 8 });
    await expectRefused(await stage('method.zip', zip), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'header_mismatch',
      field: 'compression_method',
      central: 0,
      local: 8,
    });
  });

  it('refuses a local header with another CRC', async () => {
    const zip = patchLocalHeader(await twoFiles(), 1, { crc32: 0x12345678 });
    await expectRefused(await stage('crc.zip', zip), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', { reason: 'header_mismatch', field: 'crc32' });
  });
});

describe('zip entries whose data does not match their CRC-32', () => {
  /** Sets the CRC of the `index`-th entry to `crc32` in both its local header and its central record, so the two still agree. */
  const withCrc = (zip: Buffer, index: number, crc32: number): Buffer => {
    const out = patchLocalHeader(zip, index, { crc32 });
    let seen = -1;
    for (let at = 0; at + 46 <= out.length; at++) {
      if (out.readUInt32LE(at) !== 0x02014b50 || ++seen !== index) continue;
      out.writeUInt32LE(crc32, at + 16);
      return out;
    }
    throw new Error(`no central record number ${index}`);
  };
  const big = Buffer.alloc(3 * 1024 * 1024, 'ab');

  it.each([
    ['a small stored entry', 'console.log(1)\n', false],
    ['a small deflated entry', 'console.log(1)\n', true],
    ['a streamed stored entry', big, false],
    ['a streamed deflated entry', big, true],
  ] as const)('refuses %s as malformed, naming the entry', async (_label, data, compress) => {
    const zip = await zipOf([
      { name: 'manifest.json', data: MANIFEST },
      { name: 'aaaa.js', data, compress },
    ]);
    await expectRefused(await stage('crc.zip', withCrc(zip, 1, 0x12345678)), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', { reason: 'malformed', entry: 'aaaa.js' });
  });
});

/** One stored member of {@link storedZip}; `localZip64` gives its local header 0xffffffff sizes and a ZIP64 extra field with these. */
interface StoredMember {
  readonly name: string;
  readonly data: string;
  readonly localZip64?: { readonly uncompressed: number; readonly compressed: number };
}

/** A zip of stored members written byte by byte (yazl never writes a ZIP64 local header for a small member). */
function storedZip(members: readonly StoredMember[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const member of members) {
    const name = Buffer.from(member.name);
    const data = Buffer.from(member.data);
    const crc = crc32(data);
    const zip64 = member.localZip64;
    const extra = Buffer.alloc(zip64 === undefined ? 0 : 20);
    if (zip64 !== undefined) {
      extra.writeUInt16LE(0x0001, 0);
      extra.writeUInt16LE(16, 2);
      extra.writeBigUInt64LE(BigInt(zip64.uncompressed), 4);
      extra.writeBigUInt64LE(BigInt(zip64.compressed), 12);
    }
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(zip64 === undefined ? 10 : 45, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(zip64 === undefined ? data.length : 0xffffffff, 18);
    local.writeUInt32LE(zip64 === undefined ? data.length : 0xffffffff, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(extra.length, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 45, 4);
    central.writeUInt16LE(10, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    const entry = Buffer.concat([local, name, extra, data]);
    locals.push(entry);
    centrals.push(Buffer.concat([central, name]));
    offset += entry.length;
  }
  return zipFromParts(locals, centrals);
}

describe('zip ZIP64 local headers that disagree with the central directory', () => {
  const CODE = 'console.log(1)\n';
  const members = (localZip64: NonNullable<StoredMember['localZip64']>): StoredMember[] => [
    { name: 'manifest.json', data: MANIFEST },
    { name: 'aaaa.js', data: CODE, localZip64 },
  ];

  it('stages a member whose local ZIP64 sizes are the central directory\'s', async () => {
    const staged = expectStaged(await stage('zip64.zip', storedZip(members({ uncompressed: CODE.length, compressed: CODE.length }))));
    expect((await readdir(staged.root)).sort()).toEqual(['aaaa.js', 'manifest.json']);
    await staged.discard();
  });

  // A reader of local headers alone (a streaming unzip) takes the ZIP64 sizes: 7 bytes of data here, 'console', then garbage.
  it('refuses a local ZIP64 extra field with other sizes', async () => {
    await expectRefused(await stage('zip64-lie.zip', storedZip(members({ uncompressed: 7, compressed: 7 }))), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', {
      reason: 'header_mismatch',
      entry: 'aaaa.js',
      field: 'compressed_size',
      central: CODE.length,
      local: 7,
    });
  });

  it('refuses 0xffffffff local sizes with no ZIP64 extra field to give them', async () => {
    const zip = storedZip(members({ uncompressed: CODE.length, compressed: CODE.length }));
    // The extra field's id becomes one no reader knows: the sizes it held are gone.
    const at = zip.indexOf(Buffer.from('aaaa.js')) + 'aaaa.js'.length;
    zip.writeUInt16LE(0x6666, at);
    await expectRefused(await stage('zip64-none.zip', zip), ws.stagingRoot, 'PLUGIN_ARCHIVE_INVALID', { reason: 'header_mismatch', entry: 'aaaa.js', field: 'compressed_size' });
  });
});
