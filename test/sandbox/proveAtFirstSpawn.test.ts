/**
 * `proveAt: 'first_spawn'`: creating the spawner runs no probe and works
 * where no sandbox exists; the first spawn proves the sandbox once (spawns
 * arriving meanwhile wait for the same proof) and a sandbox that cannot be
 * proved fails every spawn with the error `create` reports by default.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';

let base: string;
let spyLog: string;
let spyBwrap: string;
const started: PluginProcess[] = [];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'prove-at-'));
  mkdirSync(join(base, 'root'));
  mkdirSync(join(base, 'write'));
  spyLog = join(base, 'bwrap-runs.log');
  spyBwrap = join(base, 'bwrap');
  writeFileSync(spyBwrap, `#!/bin/sh\necho run >> '${spyLog}'\nexec /usr/bin/bwrap "$@"\n`);
  chmodSync(spyBwrap, 0o755);
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  rmSync(spyLog, { force: true });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const request = (): SandboxSpawnRequest => ({
  executable: unverifiedCommand(['/bin/echo', 'confined'], join(base, 'root')),
  env: {},
  network: false,
  writeDir: join(base, 'write'),
  hiddenPaths: [],
});

async function output(child: PluginProcess): Promise<string> {
  started.push(child);
  child.stdin.end();
  let stdout = '';
  for await (const chunk of child.stdout) stdout += String(chunk);
  return stdout;
}

describe("SandboxSpawner with proveAt: 'first_spawn'", () => {
  it('runs no probe at create, proves once at the first spawns, then runs confined', { timeout: 60_000 }, async () => {
    // The probes are memoised per host process and launcher: a launcher path of its own proves afresh.
    const spawner = (await SandboxSpawner.create({ backend: 'bubblewrap', bwrapPath: spyBwrap, proveAt: 'first_spawn' }))._unsafeUnwrap();
    expect(existsSync(spyLog)).toBe(false);
    const run = async (): Promise<string> => output((await spawner.spawn(request()))._unsafeUnwrap());
    expect(await Promise.all([run(), run()])).toEqual(['confined\n', 'confined\n']);
    const proofRuns = readFileSync(spyLog, 'utf8').split('\n').filter(Boolean).length - 2;
    expect(proofRuns).toBeGreaterThan(0);
    expect(await run()).toBe('confined\n');
    expect(readFileSync(spyLog, 'utf8').split('\n').filter(Boolean).length).toBe(proofRuns + 3);
  });

  it('where no sandbox exists: create succeeds, every spawn fails as create does by default', async () => {
    const missing = { backend: 'bubblewrap' as const, bwrapPath: join(base, 'no-bwrap') };
    const byDefault = (await SandboxSpawner.create(missing))._unsafeUnwrapErr();
    const spawner = (await SandboxSpawner.create({ ...missing, proveAt: 'first_spawn' }))._unsafeUnwrap();
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = (await spawner.spawn(request()))._unsafeUnwrapErr();
      expect(refused.code).toBe('PLUGIN_SANDBOX_UNSUPPORTED');
      expect(refused.hint).toBe(byDefault.hint);
      expect(refused.details).toEqual(byDefault.details);
    }
  });
});
