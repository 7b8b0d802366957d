/**
 * Files are hashed as staging writes them, and the package tree pin reads a
 * file again only when its status moved since: an install of thousands of
 * small files does not open and read each of them a second time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstat, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityKey, PACKAGE_TREE_LIST_NAME, pinPackageTree, type WrittenFile } from '../../src/binding/packageTree.js';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { tgzOf, zipOf } from './craftArchives.js';
import { expectStaged, workspace, type Workspace } from './workspace.js';

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
const MANIFEST = '{"name":"hashed","version":"1.0.0"}';
const SMALL = 'export const small = 1;\n';
// Random bytes do not compress: over the 1 MiB a zip member is read whole, so this one streams.
const LARGE = randomBytes(2 * 1024 * 1024);

let ws: Workspace;
beforeEach(async () => {
  ws = await workspace();
});
afterEach(async () => {
  await ws.dispose();
});

async function recordOf(root: string, file: string, written: ReadonlyMap<string, WrittenFile> | undefined): Promise<string | undefined> {
  const stat = await lstat(join(root, file), { bigint: true });
  return written?.get(identityKey(stat))?.digest.toString('hex');
}

/** The digest the pinned list records for `file`. */
async function pinnedDigest(root: string, file: string): Promise<string | undefined> {
  const list = await readFile(join(root, PACKAGE_TREE_LIST_NAME), 'utf8');
  const line = list.split('\n').find((l) => l.startsWith('f ') && l.endsWith(` ${file}`));
  return line?.split(' ')[3];
}

describe('files hashed while staging writes them', () => {
  it('records the SHA-256 of every file a zip or a tgz stages, small members and streamed ones alike', async () => {
    const zip = await ws.file(
      'hashed.zip',
      await zipOf([
        { name: 'mcp-plugin.json', data: MANIFEST },
        { name: 'lib/small.js', data: SMALL },
        { name: 'lib/large.bin', data: LARGE },
      ]),
    );
    const tgz = await ws.file(
      'hashed.tgz',
      tgzOf([
        { path: 'mcp-plugin.json', data: MANIFEST },
        { path: 'lib/small.js', data: SMALL },
      ]),
    );
    for (const [archive, files] of [
      [zip, { 'mcp-plugin.json': MANIFEST, 'lib/small.js': SMALL, 'lib/large.bin': LARGE }],
      [tgz, { 'mcp-plugin.json': MANIFEST, 'lib/small.js': SMALL }],
    ] as const) {
      const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
      for (const [file, bytes] of Object.entries(files)) expect(await recordOf(staged.root, file, staged.writtenFiles), file).toBe(sha256(bytes));
      await staged.discard();
    }
  });

  it('pins the recorded digest of a file left as it was written, and reads again a file changed since', async () => {
    const archive = await ws.file(
      'hashed.zip',
      await zipOf([
        { name: 'mcp-plugin.json', data: MANIFEST },
        { name: 'lib/small.js', data: SMALL },
        { name: 'lib/changed.js', data: SMALL },
      ]),
    );
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    await writeFile(join(staged.root, 'lib/changed.js'), 'export const changed = 2;\n');
    // A record the pin must trust only while the file's status is the one recorded: a forged digest shows which way it went.
    const forged = '00'.repeat(32);
    const records = new Map(staged.writtenFiles);
    for (const file of ['lib/small.js', 'lib/changed.js']) {
      const stat = await lstat(join(staged.root, file), { bigint: true });
      const key = identityKey(stat);
      records.set(key, { ...records.get(key)!, digest: Buffer.from(forged, 'hex') });
    }
    (await pinPackageTree(staged.root, records))._unsafeUnwrap();
    expect(await pinnedDigest(staged.root, 'lib/small.js')).toBe(forged);
    expect(await pinnedDigest(staged.root, 'lib/changed.js')).toBe(sha256('export const changed = 2;\n'));
    expect(await pinnedDigest(staged.root, 'mcp-plugin.json')).toBe(sha256(MANIFEST));
    await staged.discard();
  });
});
