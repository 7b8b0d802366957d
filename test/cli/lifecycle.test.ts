/**
 * Install → list → info → run (in new processes: restart semantics) →
 * setup → canary → quarantine → unquarantine/reload → remove, each step a
 * separate CLI process against one temp profile, the way a user or a CI job
 * drives it. The steps depend on each other and run in order.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, GREETER_ENV, json, packageGreeter, packageGuarded, packageHello, REPO, tempDir, type CliRun } from './cliHarness.js';

const SLOW = 120_000;
const SECRET = 's3cret-value-never-printed';

describe('plugin lifecycle through the CLI', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  let greeter: string;
  let guarded: string;
  const inProfile = (args: readonly string[], env?: Record<string, string>): Promise<CliRun> =>
    cli([...args, '--profile-dir', profile.path], env === undefined ? {} : { env });

  beforeAll(async () => {
    profile = await tempDir('cli-profile-');
    hello = await packageHello();
    greeter = await packageGreeter(hello);
    guarded = await packageGuarded(hello);
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
    await rm(greeter, { recursive: true, force: true });
    await rm(guarded, { recursive: true, force: true });
  });

  it('refuses a directory outside a dev profile: exit 3, the registry hint and the flag that fixes it', { timeout: SLOW }, async () => {
    const run = await inProfile(['install', hello]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/^error PLUGIN_SOURCE_NOT_ALLOWED: .* is a directory; a standard profile installs only archives$/m);
    expect(run.stderr).toMatch(/^hint: .+$/m);
    expect(run.stderr).toMatch(/^try: directories install only into dev profiles: add --dev/m);
  });

  it('installs hello with --dev and says when it becomes callable', { timeout: SLOW }, async () => {
    const run = await inProfile(['install', hello, '--dev']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^✓ installed hello 0\.1\.0 \(mcp-plugin\) into profile default$/m);
    expect(run.stdout).toMatch(/^ {2}status +installed_pending_restart$/m);
    expect(run.stdout).toContain('callable from the next mcp-plugin-host process (restart semantics)');
  });

  it('install --json has a stable shape', { timeout: SLOW }, async () => {
    const run = await inProfile(['install', greeter, '--dev', '--json']);
    expect(run.code).toBe(0);
    const out = json(run);
    expect(Object.keys(out)).toEqual(['ok', 'plugin', 'unchanged', 'canary', 'activation']);
    expect(out).toMatchObject({
      ok: true,
      activation: 'next-process',
      plugin: { name: 'greeter', status: 'needs_configuration' },
      // The canary needs the credential, which is not stored yet.
      canary: { plugin_id: 'greeter', mode: 'live', status: 'skipped', error: { code: 'PLUGIN_NEEDS_CONFIGURATION' } },
    });
  });

  it('list shows aligned columns, and --json the inventory rows', { timeout: SLOW }, async () => {
    const [human, machine] = await Promise.all([inProfile(['list']), inProfile(['list', '--json'])]);
    expect(human.code).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +VERSION +SHAPE +STATUS +OPS +DISPLAY NAME$/);
    expect(lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual(['greeter', 'hello']);
    // Every row's STATUS column starts where the header's does.
    const statusAt = lines[0]?.indexOf('STATUS');
    expect(lines.slice(1).map((l) => l.search(/(active|needs_configuration)/))).toEqual([statusAt, statusAt]);

    expect(machine.code).toBe(0);
    const out = json(machine);
    expect(Object.keys(out)).toEqual(['ok', 'profile', 'profile_dir', 'plugins']);
    expect(out.profile_dir).toBe(profile.path);
    expect(out.plugins).toEqual([
      { name: 'greeter', display_name: 'Greeter', version: '0.1.0', shape: 'mcp-plugin', status: 'needs_configuration', tos: null, risk: null, variant_count: 1 },
      { name: 'hello', display_name: 'Hello', version: '0.1.0', shape: 'mcp-plugin', status: 'active', tos: null, risk: null, variant_count: 1 },
    ]);
  });

  it('info --json describes a plugin by credential alias, never by env name', { timeout: SLOW }, async () => {
    const [hi, gr] = await Promise.all([inProfile(['info', 'hello', '--json']), inProfile(['info', 'greeter', '--json'])]);
    expect(hi.code).toBe(0);
    const plugin = json(hi).plugin as Record<string, unknown>;
    expect(plugin).toMatchObject({ name: 'hello', status: 'active', namespace_owner: 'io.example.hello', variant_ids: ['plug.hello.hello@0.1.0'] });
    expect(plugin.executable).toMatchObject({ path: 'bin/hello-mcp.mjs', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(plugin).not.toHaveProperty('env');
    expect(plugin.enforced_capabilities).not.toHaveProperty('envNames');

    expect(gr.code).toBe(0);
    expect(json(gr).plugin).toMatchObject({
      credential_descriptors: [{ alias: 'greeter-token', kind: 'api_key', display_name: 'Greeter token', setup_hint: expect.any(String) }],
    });
    expect(gr.stdout).not.toContain(GREETER_ENV);
  });

  it('run calls the installed plugin from a new process and prints its text content', { timeout: SLOW }, async () => {
    const run = await inProfile(['run', 'hello', 'hello', '{"name":"world"}']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('{"success":true,"data":{"greeting":"Hello, world!"}}\n');
  });

  it('run --json prints the raw result', { timeout: SLOW }, async () => {
    const run = await inProfile(['run', 'hello', 'hello', '-', '--json'], undefined);
    // No stdin given: "-" reads an empty stdin, which is not JSON.
    expect(run.code).toBe(2);
    const piped = await cli(['run', 'hello', 'hello', '-', '--json', '--profile-dir', profile.path], { input: '{"name":"pipe"}' });
    expect(piped.code).toBe(0);
    expect(json(piped)).toEqual({
      ok: true,
      op_id: 'plug.hello.hello',
      result: { content: [{ type: 'text', text: '{"success":true,"data":{"greeting":"Hello, pipe!"}}' }], isError: false },
      is_error: false,
    });
  });

  it('maps the plugin-local INVALID_INPUT to INVALID_ARGS with exit 1, code, message and hint', { timeout: SLOW }, async () => {
    const [human, machine] = await Promise.all([
      inProfile(['run', 'hello', 'hello', '{"name":""}']),
      inProfile(['run', 'hello', 'hello', '{"name":""}', '--json']),
    ]);
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toBe(
      'error INVALID_ARGS: name must be a non-empty string\n  (plugin code INVALID_INPUT)\nhint: Correct the arguments to match the tool input schema.\n',
    );
    expect(machine.code).toBe(1);
    expect(json(machine)).toEqual({
      ok: false,
      op_id: 'plug.hello.hello',
      error: {
        code: 'INVALID_ARGS',
        message: 'name must be a non-empty string',
        hint: 'Correct the arguments to match the tool input schema.',
        retryable: false,
        source_error_code: 'INVALID_INPUT',
        details: { plugin_id: 'hello', op_id: 'plug.hello.hello' },
      },
    });
  });

  it('an unknown tool is VARIANT_NOT_FOUND (exit 1) with a pointer to list', { timeout: SLOW }, async () => {
    const run = await inProfile(['run', 'hello', 'nope', '{}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error VARIANT_NOT_FOUND: /);
    expect(run.stderr).toMatch(/^try: mcp-plugin-host list/m);
  });

  it('a write tool needs --max-risk, and a high_stakes_write one --yes off a terminal', { timeout: SLOW }, async () => {
    expect((await inProfile(['install', guarded, '--dev'])).code).toBe(0);
    const tooRisky = await inProfile(['run', 'guarded', 'hello', '{"name":"w"}']);
    expect(tooRisky.code).toBe(1);
    expect(tooRisky.stderr).toMatch(/^error PLUGIN_RISK_NOT_ALLOWED: /);
    expect(tooRisky.stderr).toMatch(/^try: pass --max-risk write if you mean it$/m);
    const unconfirmed = await inProfile(['run', 'guarded', 'hello', '{"name":"w"}', '--max-risk', 'write']);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toMatch(/^error PLUGIN_CONFIRMATION_DENIED: /);
    expect(unconfirmed.stderr).toMatch(/^try: pass --yes/m);
    const confirmed = await inProfile(['run', 'guarded', 'hello', '{"name":"w"}', '--max-risk', 'write', '--yes']);
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toContain('Hello, w!');
    expect((await inProfile(['remove', 'guarded'])).code).toBe(0);
  });

  it('refuses to run a plugin whose credentials are missing', { timeout: SLOW }, async () => {
    const run = await inProfile(['run', 'greeter', 'hello', '{"name":"x"}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error PLUGIN_NEEDS_CONFIGURATION: /);
    expect(run.stderr).toMatch(/^try: mcp-plugin-host setup greeter$/m);
  });

  it('setup without --set on a non-terminal is a usage error', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('pass --set NAME=- with the value on stdin');
  });

  it('setup refuses a credential the plugin does not declare, naming the declared ones by alias', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter', '--set', `OTHER=${SECRET}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("setup of 'greeter' got 1 undeclared and 0 empty credential(s); it declares: greeter-token (Greeter token)");
    expect(run.stderr).not.toContain(SECRET);
  });

  it('setup --set stores the credential, runs the live canary, and never prints the value', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter', '--set', `${GREETER_ENV}=${SECRET}`]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('stored 1 credential (greeter-token) for greeter\n✓ set up greeter: canary passed (live)\n');
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    const info = json(await inProfile(['info', 'greeter', '--json']));
    expect(info.plugin).toMatchObject({ status: 'active' });
  });

  it('setup --set NAME reads the value from the environment; --json never carries it', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter', '--set', GREETER_ENV, '--json'], { [GREETER_ENV]: SECRET });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain(SECRET);
    expect(json(run)).toEqual({
      ok: true,
      plugin_id: 'greeter',
      stored: ['greeter-token'],
      canary: { plugin_id: 'greeter', mode: 'live', status: 'passed', error: null },
    });
  });

  it('a failing live canary (--canary-args) exits 1 and quarantines the plugin', { timeout: SLOW }, async () => {
    const canary = await inProfile(['canary', 'greeter', '--live', '--canary-args', 'name=', '--json']);
    expect(canary.code).toBe(1);
    expect(json(canary)).toMatchObject({
      ok: false,
      plugin_id: 'greeter',
      canary: { mode: 'live', status: 'failed', error: { code: 'INVALID_ARGS' } },
      error: { code: 'INVALID_ARGS' },
    });
    const run = await inProfile(['run', 'greeter', 'hello', '{"name":"x"}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error (VARIANT|PLUGIN)_QUARANTINED: /);
    expect(run.stderr).toMatch(/^try: mcp-plugin-host reload greeter/m);
  });

  it('unquarantine makes it callable again without starting anything', { timeout: SLOW }, async () => {
    const cleared = await inProfile(['unquarantine', 'greeter']);
    expect(cleared.code).toBe(0);
    expect(cleared.stdout).toBe('unquarantined greeter\n');
    const run = await inProfile(['run', 'greeter', 'hello', '{"name":"again"}']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Hello, again!');
  });

  it('canary with k=v overrides passes; reload clears quarantine and runs the passive canary', { timeout: SLOW }, async () => {
    await inProfile(['canary', 'greeter', '--canary-args', 'name=']);
    const live = await inProfile(['canary', 'greeter', '--live', '--canary-args', 'name=override']);
    expect(live.code).toBe(0);
    expect(live.stdout).toBe('✓ canary greeter: canary passed (live)\n');

    await inProfile(['canary', 'greeter', '--canary-args', 'name=']);
    const reloaded = await inProfile(['reload', 'greeter', '--json']);
    expect(reloaded.code).toBe(0);
    expect(json(reloaded)).toEqual({ ok: true, plugin_id: 'greeter', canary: { plugin_id: 'greeter', mode: 'passive', status: 'passed', error: null } });
    const run = await inProfile(['run', 'greeter', 'hello', '{"name":"reloaded"}']);
    expect(run.code).toBe(0);
  });

  it('remove takes the plugin out of the inventory', { timeout: SLOW }, async () => {
    const removed = await inProfile(['remove', 'hello', '--json']);
    expect(removed.code).toBe(0);
    expect(json(removed)).toEqual({ ok: true, plugin_id: 'hello', removed: true, credentials_deleted: false });
    const listed = json(await inProfile(['list', '--json']));
    expect((listed.plugins as { name: string }[]).map((p) => p.name)).toEqual(['greeter']);
    const info = await inProfile(['info', 'hello']);
    expect(info.code).toBe(1);
    expect(info.stderr).toMatch(/^error PLUGIN_NOT_FOUND: /);
  });

  it('remove keeps the credentials stored with setup for a reinstall, and --forget-secrets deletes them', { timeout: SLOW }, async () => {
    const kept = await inProfile(['remove', 'greeter', '--json']);
    expect(json(kept)).toEqual({ ok: true, plugin_id: 'greeter', removed: true, credentials_deleted: false });
    expect((await inProfile(['install', greeter, '--dev'])).code).toBe(0);
    const runs = await inProfile(['run', 'greeter', 'hello', '{"name":"kept"}']);
    expect(runs.code).toBe(0);

    const forgotten = await inProfile(['remove', 'greeter', '--forget-secrets', '--json']);
    expect(json(forgotten)).toEqual({ ok: true, plugin_id: 'greeter', removed: true, credentials_deleted: true });
    expect((await inProfile(['install', greeter, '--dev'])).code).toBe(0);
    const needsSetup = await inProfile(['run', 'greeter', 'hello', '{"name":"forgotten"}']);
    expect(needsSetup.code).toBe(1);
    expect(needsSetup.stderr).toMatch(/^error PLUGIN_NEEDS_CONFIGURATION: /);
  });

  it('installs and runs the Python hello plugin (no bundling, no SDK)', { timeout: SLOW }, async () => {
    const installed = await inProfile(['install', join(REPO, 'fixtures/plugins/hello-python'), '--dev']);
    expect(installed.code).toBe(0);
    const run = await inProfile(['run', 'hello-python', 'hello', '{"name":"python"}']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('{"success":true,"data":{"greeting":"Hello, python!"}}\n');
  });
});
