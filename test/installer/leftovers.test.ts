/**
 * Installs killed mid-way leave a staging directory and an install root no
 * lock row names. The next install (or `collectInstallLeftovers`) deletes
 * them, and never what an install still running in another process owns.
 * Each child is killed at a known point: its initial-status hook, which runs
 * after the package was renamed into its install root and before the
 * catalog transaction, prints `stored` and waits.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/ports/ports.js';
import { DEAD_PIN_MIN_AGE_MS } from '../../src/installer/schemaPins.js';
import { bundleScript } from '../support/bundleScript.js';
import { startHelper, type Helper } from '../support/childHelper.js';
import { editManifest, installed, testProfile, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
let child: { file: string; dir: string };
const running: Helper[] = [];
beforeAll(async () => {
  child = await bundleScript(join(import.meta.dirname, 'helpers', 'installerChild.ts'));
});
afterAll(async () => {
  await rm(child.dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const helper of running.splice(0)) helper.child.kill('SIGKILL');
  await p.dispose();
});

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
const list = (dir: string): Promise<string[]> => readdir(dir).then((n) => n.sort(), () => []);
/** A clock past the age after which a dead process's records may be collected. */
const later: Clock = { now: () => systemClock.now() + DEAD_PIN_MIN_AGE_MS + 60_000, setTimer: systemClock.setTimer };

const plugin = async (id: string): Promise<string> => {
  const pkg = await p.copyFixture('install-node', id);
  await editManifest(pkg, (m) => {
    m.plugin_id = id;
    m.namespace_owner = `io.example.${id}`;
  });
  return pkg;
};

/** A child installing `pkg`, stopped after its package was moved into its install root. */
const stoppedInstall = async (pkg: string): Promise<Helper> => {
  const helper = startHelper(child.file, [p.layout.root, 'install', pkg]);
  running.push(helper);
  await helper.waitFor('stored');
  return helper;
};
const killed = async (helper: Helper): Promise<void> => {
  helper.child.kill('SIGKILL');
  await helper.exited;
};

describe('leftovers of killed installs', () => {
  it('are deleted by the next install, while an install paused in another process keeps its staging directory and root', async () => {
    p = await testProfile('dev');
    for (const id of ['alpha', 'beta', 'gamma']) await killed(await stoppedInstall(await plugin(id)));
    const deadStages = await list(p.layout.stagingDir);
    const deadRoots = await list(join(p.layout.pluginsDir, 'alpha'));
    expect(deadStages).toHaveLength(3);
    expect(deadRoots).toHaveLength(1);

    const paused = await stoppedInstall(await plugin('delta'));
    const pausedStage = (await list(p.layout.stagingDir)).filter((n) => !deadStages.includes(n));
    const pausedRoot = await list(join(p.layout.pluginsDir, 'delta'));
    expect(pausedStage).toHaveLength(1);
    expect(pausedRoot).toHaveLength(1);

    const next = p.installerWith({ clock: later });
    unwrap(await next.install(await plugin('omega')));
    expect(await list(p.layout.stagingDir)).toEqual(pausedStage);
    expect(await list(p.layout.pluginsDir)).toEqual(['delta', 'omega']);
    expect(await list(join(p.layout.pluginsDir, 'delta'))).toEqual(pausedRoot);

    paused.child.stdin.write('go\n');
    await paused.waitFor('committed');
    const delta = await installed(p, 'delta');
    expect(delta?.lock.binding.install_root).toBe(join(p.layout.pluginsDir, 'delta', pausedRoot[0]!));
    expect(await exists(delta!.lock.binding.install_root)).toBe(true);
    await paused.exited;
    expect(await list(p.layout.stagingDir)).toEqual([]);
  });

  it('keeps the staging directory of a dead process until it is old enough, and never an installed root', async () => {
    p = await testProfile('dev');
    const kept = unwrap(await p.installer.install(await plugin('alpha')));
    await killed(await stoppedInstall(await plugin('beta')));
    const young = unwrap(await p.installer.collectInstallLeftovers());
    // A dead process on this host is only trusted dead after DEAD_PIN_MIN_AGE_MS (pids are per namespace).
    expect(young.staging).toEqual([]);
    expect(young.installRoots).toEqual([]);
    const old = unwrap(await p.installerWith({ clock: later }).collectInstallLeftovers());
    expect(old.staging).toHaveLength(1);
    expect(old.installRoots).toEqual([expect.stringMatching(/^beta\/1\.0\.0-[0-9a-f]+$/)]);
    expect(await list(p.layout.pluginsDir)).toEqual(['alpha']);
    expect(await exists(kept.lock.binding.install_root)).toBe(true);
    expect(await list(p.layout.stagingDir)).toEqual([]);
  });
});
