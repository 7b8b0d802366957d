/**
 * `list` reads only the catalog: it neither waits for the sandbox probe nor
 * needs a sandbox at all. A real CLI process on a profile with an installed
 * plugin: once where bwrap cannot be found, once with a spy bwrap on PATH
 * that records every run (`info`, which reports the enforced sandbox, still
 * proves it at open, and so shows the spy works).
 */
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PluginHost } from '../../src/index.js';
import { cli, json, packageHello, tempDir } from './cliHarness.js';

const SLOW = 60_000;
let work: { readonly path: string; dispose(): Promise<void> };
let profileDir: string;
let noSandbox: Readonly<Record<string, string>>;
let spied: Readonly<Record<string, string>>;
let spyLog: string;

beforeAll(async () => {
  work = await tempDir('mcp-list-no-probe-');
  profileDir = join(work.path, 'profile');
  const host = (await PluginHost.open({ profileDir, profileKind: 'dev', interpreterSearchPath: '/usr/bin:/bin' }))._unsafeUnwrap();
  (await host.install(await packageHello(), { canary: false }))._unsafeUnwrap();
  await host.close();

  const bare = join(work.path, 'bare');
  await mkdir(bare);
  await symlink(process.execPath, join(bare, 'node'));
  noSandbox = { PATH: bare };

  const spy = join(work.path, 'spy');
  await mkdir(spy);
  spyLog = join(work.path, 'bwrap-runs.log');
  await writeFile(join(spy, 'bwrap'), `#!/bin/sh\necho "$*" >> '${spyLog}'\nexec /usr/bin/bwrap "$@"\n`);
  await chmod(join(spy, 'bwrap'), 0o755);
  spied = { PATH: `${spy}:/usr/bin:/bin` };
}, SLOW);
afterAll(() => work.dispose());

const list = (env: Readonly<Record<string, string>>) => cli(['list', '--json', '--dev', '--sandbox', 'bubblewrap', '--profile-dir', profileDir], { env });

describe('list without the sandbox probe', () => {
  it('lists the profile where no sandbox can be created', { timeout: SLOW }, async () => {
    const run = await list(noSandbox);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, plugins: [{ name: 'hello', status: 'active', variant_count: 1 }] });
  });

  it('never runs bwrap; info, which reports the enforced sandbox, still proves it', { timeout: SLOW }, async () => {
    const run = await list(spied);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, plugins: [{ name: 'hello' }] });
    expect(existsSync(spyLog)).toBe(false);

    const info = await cli(['info', 'hello', '--json', '--dev', '--sandbox', 'bubblewrap', '--profile-dir', profileDir], { env: spied });
    expect(info.code, info.stderr).toBe(0);
    expect((await readFile(spyLog, 'utf8')).length).toBeGreaterThan(0);
  });
});
