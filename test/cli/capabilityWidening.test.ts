/**
 * An upgrade that gives a plugin a power the installed version did not have
 * (the network, an env name, ...) through the CLI: asked on a terminal,
 * naming each new power; refused without one unless --yes, as an upgrade
 * that rates tools lower is; a --grant-* flag naming the power is the
 * caller's own consent to it. Before, a script or --json run installed it
 * unasked.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, copyWithManifest, json, onTerminal, packageHello, tempDir, type CliRun } from './cliHarness.js';

const SLOW = 120_000;

describe('an upgrade that widens powers through the CLI', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  const made: string[] = [];
  const profileArgs = (): string[] => ['--dev', '--skip-canary', '--profile-dir', profile.path];
  const inProfile = (args: readonly string[]): Promise<CliRun> => cli([...args, ...profileArgs()]);
  /** The hello package at `version`, declaring `capabilities` over the fixture's (no network, no env). */
  const version = async (v: string, capabilities: Record<string, unknown> = {}): Promise<string> => {
    const dir = await copyWithManifest(hello, `${profile.path}-${v}`, (manifest) => {
      manifest.version = v;
      manifest.declared_capabilities = { ...(manifest.declared_capabilities as Record<string, unknown>), ...capabilities };
    });
    made.push(dir);
    return dir;
  };
  const installedVersion = async (): Promise<unknown> => (json(await cli(['info', 'hello', '--json', '--profile-dir', profile.path])).plugin as { version?: unknown } | undefined)?.version;

  beforeAll(async () => {
    profile = await tempDir('cli-widened-');
    hello = await packageHello();
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  it('refuses without a terminal or --yes, naming the powers; asks on a terminal; --grant-network or --yes installs', { timeout: SLOW }, async () => {
    expect((await inProfile(['install', await version('0.1.0')])).code).toBe(0);
    const networked = await version('0.2.0', { network: true });

    const script = await inProfile(['install', networked]);
    expect(script.code).not.toBe(0);
    expect(script.stderr).toMatch(/^error PLUGIN_TRUST_DECLINED: .*did not have \(network\)/m);
    expect(script.stderr).toMatch(/^hint: Review network, .*--yes.*--grant-network/m);
    const asJson = await inProfile(['install', networked, '--json']);
    expect(json(asJson)).toMatchObject({ ok: false, error: { code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'capabilities_widened', added_capabilities: [{ field: 'network', value: true }] } } });
    expect(await installedVersion()).toBe('0.1.0');

    const declined = await onTerminal(['install', networked, ...profileArgs()], /with these new powers\? \[y\/N\] /, 'n');
    expect(declined.stdout).toMatch(/New powers beyond the version accepted before:\r?\n {2}network\r?\n/);
    expect(declined.stdout).toContain('PLUGIN_TRUST_DECLINED');
    expect(declined.code).not.toBe(0);
    expect(await installedVersion()).toBe('0.1.0');

    // The caller granting the network on the command line is its consent: a script installs it.
    const granted = await inProfile(['install', networked, '--grant-network', '--json']);
    expect(json(granted)).toMatchObject({ ok: true });
    expect(await installedVersion()).toBe('0.2.0');

    // An env name the package adds is named too, and --yes accepts it without a terminal.
    const withEnv = await version('0.3.0', { network: true, env_allow: ['HELLO_TOKEN'] });
    const unasked = await inProfile(['install', withEnv, '--json']);
    expect(json(unasked)).toMatchObject({ ok: false, error: { details: { reason: 'capabilities_widened', added_capabilities: [{ field: 'env_allow', value: 'HELLO_TOKEN' }] } } });
    expect((await inProfile(['install', withEnv, '--yes'])).code).toBe(0);
    expect(await installedVersion()).toBe('0.3.0');
    // Fewer powers are not asked about.
    expect((await inProfile(['install', await version('0.4.0', { network: false, env_allow: ['HELLO_TOKEN'] })])).code).toBe(0);
    expect(await installedVersion()).toBe('0.4.0');
  });
});
