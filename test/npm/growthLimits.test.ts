/**
 * The package limits hold while npm writes: a small tarball that unpacks to
 * far more than the limit is stopped during the fetch, not measured after
 * npm has put all of it on disk.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli, fetchNpmPackage, parseNpmSpec } from '../../src/installer/npmFetch.js';

const BOMB_BYTES = 256 * 1024 * 1024;
const LIMIT_BYTES = 1024 * 1024;
let base: string;
let tarball: string;

async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-growth-'));
  const pkg = join(base, 'bomb');
  await mkdir(pkg);
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'bomb', version: '1.0.0', bin: { bomb: 'index.js' } }));
  await writeFile(join(pkg, 'index.js'), '#!/usr/bin/env node\n');
  // Zeros compress about a thousandfold; a MiB that does not compress keeps the ratio under what npm's tar refuses (1,000).
  execFileSync('truncate', ['-s', String(BOMB_BYTES), join(pkg, 'zeros')]);
  await writeFile(join(pkg, 'noise'), randomBytes(1024 * 1024));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', base], { cwd: pkg, stdio: 'ignore' });
  await rm(join(pkg, 'zeros'));
  tarball = join(base, 'bomb-1.0.0.tgz');
}, 120_000);
afterAll(() => rm(base, { recursive: true, force: true }));

describe('npm growth limits', { timeout: 120_000 }, () => {
  it('stops npm once what it wrote passes the limit, long before the whole bomb is on disk', async () => {
    expect((await stat(tarball)).size).toBeLessThan(4 * 1024 * 1024);
    const work = join(base, 'work');
    await mkdir(work);
    const limits = { maxArchiveBytes: LIMIT_BYTES, maxExtractedBytes: LIMIT_BYTES, maxEntries: 50_000 };
    const fetched = await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work, {}, limits);
    expect(fetched._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_ARCHIVE_INVALID', details: { reason: 'limit' } });
    // The remedy for a package large on purpose (mongodb-mcp-server@3.0.4) is the host's limit, not repackaging a published package.
    expect(fetched._unsafeUnwrapErr().hint).toMatch(/^The package is over the host's max\w+ \(details\.max\)\. .* higher packageLimits\.max\w+ \(library option/);
    expect(await diskBytes(work)).toBeLessThan(BOMB_BYTES / 2);
  });
});
