/**
 * Files a package ships and the installer reads before judging them (an MCP
 * Bundle's manifest.json, the manifest.json of an npm package, a Python
 * package's pyproject.toml) are read no further than their size limit: a
 * package within the package limits may carry one of hundreds of megabytes,
 * and reading it whole first held all of it in the host's memory. Each read
 * runs in a child process whose peak RSS is compared before and after; the
 * file is sparse, so the test writes no such amount to disk.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript } from '../support/bundleScript.js';
import { readAtMost } from '../../src/manifest/readAtMost.js';

const run = promisify(execFile);
const SLOW = 120_000;
// Within the default package limits (256 MiB extracted), far past every file limit (1 MiB).
const LARGE_FILE_BYTES = 200 * 1024 * 1024;
// Well under the file's size: the reader may hold its limit and its own working set, never the file.
const MAX_GROWTH_MIB = 64;

let child: { file: string; dir: string };
let work: string;
beforeAll(async () => {
  child = await bundleScript(join(import.meta.dirname, 'helpers', 'boundedReadChild.ts'));
  work = await mkdtemp(join(tmpdir(), 'bounded-reads-'));
}, SLOW);
afterAll(async () => {
  await rm(child.dir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

/** A directory holding `name` as a sparse file of LARGE_FILE_BYTES, starting with `head`. */
async function packageWith(name: string, head: string): Promise<string> {
  const dir = await mkdtemp(join(work, 'package-'));
  await writeFile(join(dir, name), head);
  await truncate(join(dir, name), LARGE_FILE_BYTES);
  return dir;
}

async function measuredRead(reader: string, dir: string): Promise<{ grownMiB: number; outcome: unknown }> {
  const { stdout } = await run(process.execPath, [child.file, reader, dir], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as { grownMiB: number; outcome: unknown };
}

describe('bounded reads of shipped files', () => {
  it("reads no more of a bundle's manifest.json than the manifest limit, and leaves it to the manifest validator", { timeout: SLOW }, async () => {
    const read = await measuredRead('bundle-manifest', await packageWith('manifest.json', '{"manifest_version":"0.3","server":{'));
    expect(read.outcome).toEqual({ ok: null });
    expect(read.grownMiB).toBeLessThan(MAX_GROWTH_MIB);
  });

  it("reads no more of an npm package's manifest.json than the manifest limit, and counts it as a plugin manifest the validator reports", { timeout: SLOW }, async () => {
    const read = await measuredRead('npm-manifest', await packageWith('manifest.json', '{"plugin_id":"large",'));
    expect(read.outcome).toEqual({ ok: { name: 'manifest.json', plugin: true } });
    expect(read.grownMiB).toBeLessThan(MAX_GROWTH_MIB);
  });

  it('refuses a pyproject.toml over its limit without reading it whole', { timeout: SLOW }, async () => {
    const read = await measuredRead('pyproject', await packageWith('pyproject.toml', '[project]\nname = "large"\n'));
    expect(read.outcome).toEqual({ error: 'PLUGIN_PYTHON_INSTALL_FAILED', reason: 'pyproject_invalid' });
    expect(read.grownMiB).toBeLessThan(MAX_GROWTH_MIB);
  });
});

describe('readAtMost on a file whose size says nothing of its length', () => {
  it('reads a /proc file (size 0) to its end, not one byte as if it were whole', async () => {
    const text = (await readAtMost('/proc/self/status', 1024 * 1024)).toString('utf8');
    expect(text).toMatch(/^Name:/);
    expect(text).toContain('\nPid:');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('still stops one byte past the limit', async () => {
    expect((await readAtMost('/proc/self/status', 16)).length).toBe(17);
  });
});
