/**
 * Installing an installed plugin again through the CLI: the same package is
 * an unchanged install, other bytes under the same version need --force, a
 * lower version needs --allow-downgrade; each refusal says which flag fixes it.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, copyWithManifest, json, packageHello, tempDir, type CliRun } from './cliHarness.js';

const SLOW = 120_000;

describe('reinstalling through the CLI', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  const inProfile = (args: readonly string[]): Promise<CliRun> => cli([...args, '--dev', '--profile-dir', profile.path]);
  const edited = (as: string, edit: (m: Record<string, unknown>) => void): Promise<string> =>
    copyWithManifest(hello, join(profile.path, '..', `${profile.path.split('/').pop()}-${as}`), edit);

  beforeAll(async () => {
    profile = await tempDir('cli-reinstall-');
    hello = await packageHello();
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
  });

  it('calls the same package again unchanged, refuses other bytes without --force and a lower version without --allow-downgrade', { timeout: SLOW }, async () => {
    expect((await inProfile(['install', hello, '--skip-canary'])).code).toBe(0);

    const again = await inProfile(['install', hello, '--json']);
    expect(again.code).toBe(0);
    expect(json(again)).toMatchObject({ ok: true, unchanged: true, plugin: { name: 'hello', version: '0.1.0' } });

    const changed = await edited('changed', (m) => (m.description = 'Changed without a new version'));
    const refused = await inProfile(['install', changed]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^error PLUGIN_ALREADY_INSTALLED: /m);
    expect(refused.stderr).toMatch(/^try: .*--force/m);
    expect((await inProfile(['install', changed, '--force', '--skip-canary'])).code).toBe(0);

    const older = await edited('older', (m) => (m.version = '0.0.9'));
    const downgrade = await inProfile(['install', older]);
    expect(downgrade.code).toBe(3);
    expect(downgrade.stderr).toMatch(/^error PLUGIN_DOWNGRADE_REFUSED: /m);
    expect(downgrade.stderr).toMatch(/^try: .*--allow-downgrade/m);
    const allowed = await inProfile(['install', older, '--allow-downgrade', '--skip-canary', '--json']);
    expect(allowed.code).toBe(0);
    expect(json(allowed)).toMatchObject({ ok: true, unchanged: false, plugin: { version: '0.0.9' } });
    await rm(changed, { recursive: true, force: true });
    await rm(older, { recursive: true, force: true });
  });
});
