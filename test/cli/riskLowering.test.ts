/**
 * An upgrade that makes tools easier to call than the installed version
 * (review R3 F4): a destructive tool rated read, a new tool above read. The
 * same owner's upgrade is otherwise installed unasked; this one is asked on
 * a terminal, naming the tools and their old→new class, and refused without
 * one unless --yes.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, copyWithManifest, json, onTerminal, packageHello, tempDir, type CliRun } from './cliHarness.js';

const SLOW = 120_000;

describe('an upgrade that lowers risk classes through the CLI', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  const made: string[] = [];
  const profileArgs = (): string[] => ['--dev', '--skip-canary', '--profile-dir', profile.path];
  const inProfile = (args: readonly string[]): Promise<CliRun> => cli([...args, ...profileArgs()]);
  /** The hello package at `version`, its tools rated as given. */
  const version = async (v: string, tools: Record<string, string>): Promise<string> => {
    const dir = await copyWithManifest(hello, `${profile.path}-${v}`, (manifest) => {
      manifest.version = v;
      manifest.advertised_tools = Object.entries(tools).map(([name, risk_class]) => ({ name, description: `The ${name} tool`, risk_class }));
    });
    made.push(dir);
    return dir;
  };
  const installedVersion = async (): Promise<unknown> => (json(await cli(['info', 'hello', '--json', '--profile-dir', profile.path])).plugin as { version?: unknown } | undefined)?.version;

  beforeAll(async () => {
    profile = await tempDir('cli-risk-lowered-');
    hello = await packageHello();
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  it('refuses without a terminal or --yes, naming the tools; asks on a terminal; --yes installs', { timeout: SLOW }, async () => {
    expect((await inProfile(['install', await version('0.1.0', { hello: 'destructive' })])).code).toBe(0);
    const lowered = await version('0.2.0', { hello: 'read' });

    // A script (stdin not a terminal), as in the finding's repro.
    const script = await inProfile(['install', lowered]);
    expect(script.code).not.toBe(0);
    expect(script.stderr).toMatch(/^error PLUGIN_TRUST_DECLINED: .*hello destructive→read/m);
    expect(script.stderr).toMatch(/^hint: Review hello destructive→read, .*--yes/m);
    const asJson = await inProfile(['install', lowered, '--json']);
    expect(json(asJson)).toMatchObject({ ok: false, error: { code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'risk_lowered', risk_changes: [{ name: 'hello', from: { risk_class: 'destructive' }, to: { risk_class: 'read' } }] } } });
    expect(await installedVersion()).toBe('0.1.0');

    const declined = await onTerminal(['install', lowered, ...profileArgs()], /with these tools rated lower\? \[y\/N\] /, 'n');
    expect(declined.stdout).toMatch(/Easier to call than the version accepted before:\r?\n {2}hello destructive→read/);
    expect(declined.stdout).toContain('PLUGIN_TRUST_DECLINED');
    expect(declined.code).not.toBe(0);
    expect(await installedVersion()).toBe('0.1.0');
    const accepted = await onTerminal(['install', lowered, ...profileArgs()], /with these tools rated lower\? \[y\/N\] /, 'y');
    expect(accepted.code).toBe(0);
    expect(await installedVersion()).toBe('0.2.0');

    // A new tool above read is asked about as well; --yes accepts it without a terminal.
    const added = await version('0.3.0', { hello: 'read', wipe: 'destructive' });
    const unasked = await inProfile(['install', added]);
    expect(unasked.stderr).toMatch(/^error PLUGIN_TRUST_DECLINED: .*wipe new→destructive/m);
    expect((await inProfile(['install', added, '--yes'])).code).toBe(0);
    expect(await installedVersion()).toBe('0.3.0');
    // Raising a class is not asked about.
    expect((await inProfile(['install', await version('0.4.0', { hello: 'write', wipe: 'destructive' })])).code).toBe(0);
    expect(await installedVersion()).toBe('0.4.0');
  });
});
