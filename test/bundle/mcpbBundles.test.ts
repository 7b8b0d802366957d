/**
 * MCP Bundle mapping through PluginHost with a small real server (the probe
 * plugin's server, bundled into one file as `server/probe.mjs`): the grant
 * model's default and widening, settings and the error at start while a
 * required one is missing, the binary server type and the old `dxt_version`
 * form, a bundle that lists no tools, and every refusal with its stable code
 * and pointer.
 */
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from 'neverthrow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import { HostPool, jsonOf } from '../support/hostHarness.js';
import { bundledServer, bundleDirectory, packBundle } from '../support/mcpbBundles.js';
import { GREETER_SERVER } from '../npm/npmPack.js';

const SLOW = 120_000;
const pool = new HostPool();
const made: string[] = [];
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(made.map((path) => rm(path, { recursive: true, force: true }))));

let server: string;
const PROBE_TOOLS = ['echo', 'crash', 'env', 'read_path', 'fail', 'write_note', 'rename_note', 'wipe'].map((name) => ({ name }));

beforeAll(async () => {
  server = join(await mkdtemp(join(tmpdir(), 'mcpb-probe-')), 'probe.mjs');
  made.push(join(server, '..'));
  await bundledServer('fixtures/plugins/host-probe/bin/probe.mjs', server);
}, SLOW);

function must<T>(result: Result<T, HostError>): T {
  if (result.isErr()) expect.fail(`${result.error.code}: ${result.error.message} ${JSON.stringify(result.error.details ?? {})}`);
  return result.value;
}

type Manifest = Record<string, unknown>;

/** A probe bundle's manifest, with `change` applied over the defaults. */
function probeManifest(change: Manifest = {}, server: Manifest = {}): Manifest {
  return {
    manifest_version: '0.3',
    name: 'probe_bundle',
    version: '1.0.0',
    description: 'The probe server as an MCP Bundle',
    author: { name: 'Tests' },
    server: { type: 'node', entry_point: 'server/probe.mjs', mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'] }, ...server },
    tools: PROBE_TOOLS,
    ...change,
  };
}

/**
 * A bundle directory holding the probe server: with its `#!/usr/bin/env node`
 * line for a binary server, without one for a node server (mcp_config names
 * the interpreter, as in bundles whose entry point is a plain module).
 */
async function probeBundle(manifest: Manifest, shebang = false): Promise<string> {
  const dir = await bundleDirectory(manifest);
  made.push(dir);
  await mkdir(join(dir, 'server'));
  const source = await readFile(server, 'utf8');
  await writeFile(join(dir, 'server/probe.mjs'), shebang ? source : source.replace(/^#!.*\n/, ''), { mode: 0o755 });
  return dir;
}

async function probeEnv(host: Awaited<ReturnType<HostPool['open']>>): Promise<Record<string, string>> {
  return jsonOf<{ data: { env: Record<string, string> } }>(must(await host.call('plug.probe-bundle.env', {}, { maxRisk: 'destructive' }))).data.env;
}

describe('MCP Bundles: grant, settings, server types', () => {
  it('runs a bundle with the host default (no network, no host env), and a grant widens it', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const env = { PATH: '/usr/bin:/bin', PROBE_GREETING: 'hello' };
    const bundle = await packBundle(await probeBundle(probeManifest()));
    made.push(join(bundle, '..'));
    const installer = await pool.open(dir, { env });
    const plain = must(await installer.install(bundle, { canary: false }));
    expect(plain.plugin).toMatchObject({ name: 'probe-bundle', granted_capabilities: { network: false, env_allow: [], basis: 'host_default', grant: null } });
    // The tools the bundle lists carry no hints (MCPB has none): destructive, as MCP reads a tool without hints, so not callable under write.
    expect(plain.plugin.operations.map((o) => o.risk_class)).toEqual(PROBE_TOOLS.map(() => 'destructive'));
    expect(must(await installer.inspect(bundle, {})).report.form).toBe('mcpb');
    await installer.close();
    let host = await pool.open(dir, { env });
    expect((await host.call('plug.probe-bundle.env', {}, { maxRisk: 'write' }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_RISK_NOT_ALLOWED', details: { risk_class: 'destructive' } });
    expect(Object.keys(await probeEnv(host))).not.toContain('PROBE_GREETING');
    expect(must(await host.info('probe-bundle')).enforced_capabilities?.network).toBe(false);
    await host.close();

    const regrant = await pool.open(dir, { env });
    const granted = must(await regrant.install(bundle, { canary: false, grant: { network: true, env_allow: ['PROBE_GREETING'] } }));
    expect(granted.unchanged).toBeUndefined();
    expect(granted.plugin.granted_capabilities).toMatchObject({ network: true, env_allow: ['PROBE_GREETING'], basis: 'host_default' });
    expect(must(await regrant.install(bundle, { canary: false, grant: { env_allow: ['PROBE_GREETING'], network: true } })).unchanged).toBe(true);
    await regrant.close();
    host = await pool.open(dir, { env });
    expect(await probeEnv(host)).toMatchObject({ PROBE_GREETING: 'hello' });
    expect(must(await host.info('probe-bundle')).enforced_capabilities?.network).toBe(true);
  });

  it('fails at start while a required setting has no value, with a hint, and runs once installed with it', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const manifest = probeManifest(
      {
        user_config: {
          label: { type: 'string', title: 'Label', description: 'Passed as PROBE_LABEL', required: true },
          depth: { type: 'number', title: 'Depth', description: 'Passed as PROBE_DEPTH', default: 3, min: 1, max: 9 },
        },
      },
      { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { PROBE_LABEL: '${user_config.label}', PROBE_DEPTH: '${user_config.depth}', PROBE_DATA: '${HOME}${/}x' } } },
    );
    const bundle = await probeBundle(manifest);
    const installer = await pool.open(dir);
    const missing = must(await installer.install(bundle, { canary: false }));
    expect(missing.plugin).toMatchObject({ settings: { depth: 3 }, missing_settings: ['label'] });
    await installer.close();
    let host = await pool.open(dir);
    const refused = await host.call('plug.probe-bundle.echo', {}, { maxRisk: 'destructive' });
    expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SETTING_MISSING', details: { missing_settings: ['label'] } });
    expect(refused._unsafeUnwrapErr().hint).toContain('--setting label=');
    await host.close();

    const fixer = await pool.open(dir);
    const refusedSetting = (await fixer.install(bundle, { canary: false, settings: { depth: '12' } }))._unsafeUnwrapErr();
    expect(refusedSetting).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { violations: [{ pointer: '/settings/depth' }] } });
    const fixed = must(await fixer.install(bundle, { canary: false, settings: { label: 'blue', depth: '5' } }));
    expect(fixed.plugin).toMatchObject({ settings: { label: 'blue', depth: 5 }, missing_settings: [] });
    await fixer.close();
    host = await pool.open(dir);
    expect(await probeEnv(host)).toMatchObject({ PROBE_LABEL: 'blue', PROBE_DEPTH: '5', PROBE_DATA: `${join(dir, 'data', 'probe-bundle')}/x` });
  });

  it('gives a bundle that lists no tools the tools its server lists in a sandboxed start, marked needs_review', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    const installed = must(await host.install(await probeBundle(probeManifest({ tools: undefined })), { canary: false }));
    // The probe's tools carry no annotations: destructive, as MCP reads a tool without hints.
    expect(installed.plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual(PROBE_TOOLS.map(({ name }) => [name, 'destructive']));
    expect(installed.plugin.risk).toMatch(/^needs_review: /);
    expect(jsonOf<{ data: { args: { message: string } } }>(must(await host.call('plug.probe-bundle.echo', { message: 'listed' }, { maxRisk: 'destructive' }))).data.args.message).toBe('listed');
  });

  it('takes the server\'s own tool list when the bundle says tools_generated', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile());
    const installed = must(await host.install(await probeBundle(probeManifest({ tools: [{ name: 'echo' }], tools_generated: true })), { canary: false }));
    expect(installed.plugin.operations.map((o) => o.tool_name)).toEqual(PROBE_TOOLS.map(({ name }) => name));
    expect(installed.plugin.risk).toMatch(/^needs_review: /);
  });

  it('keeps listed tools at write or above whatever their annotations claim, until a person reviews them', { timeout: SLOW }, async () => {
    const dir = await bundleDirectory(
      probeManifest({ name: 'greeter_bundle', tools: [{ name: 'greet' }], tools_generated: true }, { entry_point: 'server/greeter.mjs', mcp_config: { command: 'node', args: ['${__dirname}/server/greeter.mjs'] } }),
    );
    made.push(dir);
    await mkdir(join(dir, 'server'));
    await writeFile(join(dir, 'server/greeter.mjs'), GREETER_SERVER.replace(/^#!.*\n/, ''));
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    const installed = must(await host.install(dir, { canary: false }));
    expect(Object.fromEntries(installed.plugin.operations.map((o) => [o.tool_name, o.risk_class]))).toEqual({ greet: 'write', forget: 'destructive', remember: 'destructive', purge: 'destructive' });
    expect((await host.call('plug.greeter-bundle.greet', { name: 'x' }))._unsafeUnwrapErr().code).toBe('PLUGIN_RISK_NOT_ALLOWED');
  });

  it('runs a binary server (its entry point is the command) from an old dxt_version manifest', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const manifest = probeManifest({ manifest_version: undefined, dxt_version: '0.1' }, { type: 'binary', mcp_config: { command: '${__dirname}/server/probe.mjs', args: [] } });
    const host = await pool.open(dir, { activation: 'immediate' });
    must(await host.install(await probeBundle(manifest, true), { canary: false }));
    expect(jsonOf<{ data: { args: { message: string } } }>(must(await host.call('plug.probe-bundle.echo', { message: 'binary' }, { maxRisk: 'destructive' }))).data.args.message).toBe('binary');
  });
});

describe('MCP Bundles: refusals', () => {
  const at = (code: string, pointer: string): { code: string; pointer: string } => ({ code, pointer });
  it.each([
    ['an unknown manifest_version', probeManifest({ manifest_version: '9.9' }), at('PLUGIN_BUNDLE_UNSUPPORTED', '/manifest_version')],
    ['a manifest the official schema refuses', probeManifest({ author: undefined }), at('PLUGIN_MANIFEST_INVALID', '/author')],
    ['a uv server', probeManifest({ manifest_version: '0.4' }, { type: 'uv' }), at('PLUGIN_BUNDLE_UNSUPPORTED', '/server/type')],
    ['another platform', probeManifest({ compatibility: { platforms: ['win32'] } }), at('PLUGIN_BUNDLE_INCOMPATIBLE', '/compatibility/platforms')],
    ['a Node version this host lacks', probeManifest({ compatibility: { runtimes: { node: '>=99' } } }), at('PLUGIN_BUNDLE_INCOMPATIBLE', '/compatibility/runtimes/node')],
    ['an interpreter named by path', probeManifest({}, { mcp_config: { command: '/usr/bin/node', args: ['${__dirname}/server/probe.mjs'] } }), at('PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/command')],
    ['a first argument that is not the entry point', probeManifest({}, { mcp_config: { command: 'node', args: ['--inspect', '${__dirname}/server/probe.mjs'] } }), at('PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/args/0')],
    [
      'a sensitive value in an argument',
      probeManifest(
        { user_config: { token: { type: 'string', title: 'Token', description: 'secret', sensitive: true } } },
        { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs', '--token=${user_config.token}'] } },
      ),
      at('PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/args/1'),
    ],
    ['a desktop folder', probeManifest({}, { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs', '${DOCUMENTS}'] } }), at('PLUGIN_BUNDLE_UNSUPPORTED', '/server/mcp_config/args/1')],
    // An inherited property of a plain object is no user_config key: it must not pass as one (its value would be a function).
    [
      'a placeholder naming an inherited property as a user_config key',
      probeManifest(
        { user_config: { label: { type: 'string', title: 'Label', description: 'label', default: 'x' } } },
        { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs', '${user_config.constructor}'] } },
      ),
      at('PLUGIN_MANIFEST_INVALID', '/server/mcp_config/args/1'),
    ],
    ['a denylisted env var', probeManifest({}, { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { NODE_OPTIONS: '--require x' } } }), at('PLUGIN_ENV_PROHIBITED', '/server/mcp_config/env')],
    // Each makes the interpreter load code from a path before (or instead of) the pinned files: OpenSSL dlopens the
    // providers and engines its configuration names (Node reads OPENSSL_CONF at start-up), Python reads cached
    // bytecode from PYTHONPYCACHEPREFIX, runs the .pth files of PYTHONUSERBASE's site-packages, loads native modules
    // below PYTHONPLATLIBDIR, and glibc's iconv loads the modules GCONV_PATH names. The data directory is writable.
    ...['OPENSSL_CONF', 'OPENSSL_MODULES', 'OPENSSL_ENGINES', 'PYTHONPYCACHEPREFIX', 'PYTHONUSERBASE', 'PYTHONPLATLIBDIR', 'GCONV_PATH'].map(
      (name): [string, ReturnType<typeof probeManifest>, ReturnType<typeof at>] => [
        `${name} in the bundle's env`,
        probeManifest({}, { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { [name]: '${HOME}/x' } } }),
        at('PLUGIN_ENV_PROHIBITED', '/server/mcp_config/env'),
      ],
    ),
    // Its server starts once to list its tools before the env is judged: that start must not get the denied name either.
    [
      'a denylisted env var on a bundle that lists no tools',
      probeManifest({ tools: undefined }, { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { NODE_OPTIONS: '--require x' } } }),
      at('PLUGIN_ENV_PROHIBITED', '/server/mcp_config/env'),
    ],
    // A name with '=' passes a name denylist yet sets NODE_OPTIONS: refused before that start too.
    [
      "an env name holding '=' on a bundle that lists no tools",
      probeManifest({ tools: undefined }, { mcp_config: { command: 'node', args: ['${__dirname}/server/probe.mjs'], env: { 'NODE_OPTIONS=--require': '${__dirname}/server/absent.cjs' } } }),
      at('PLUGIN_ENV_PROHIBITED', '/server/mcp_config/env'),
    ],
  ])('refuses %s', { timeout: SLOW }, async (_what, manifest, expected) => {
    const host = await pool.open(await pool.profile());
    const refused = (await host.install(await probeBundle(manifest), { canary: false }))._unsafeUnwrapErr();
    expect(refused.code).toBe(expected.code);
    expect(refused.details).toMatchObject({ violations: [expected] });
    expect(must(await host.list())).toEqual([]);
  });

  it('never runs a command named by a relative path to read its version, at inspect or install', { timeout: SLOW }, async () => {
    const outside = await mkdtemp(join(tmpdir(), 'mcpb-outside-'));
    made.push(outside);
    const marker = join(outside, 'ran');
    await writeFile(join(outside, 'evil.sh'), `#!/bin/sh\necho ran > ${marker}\necho v20.0.0\n`, { mode: 0o755 });
    const command = `${'../'.repeat(12)}${outside.slice(1)}/evil.sh`;
    const manifest = probeManifest({ compatibility: { runtimes: { node: '>=1.0.0' } } }, { mcp_config: { command, args: ['${__dirname}/server/probe.mjs'] } });
    const host = await pool.open(await pool.profile());
    const bundle = await probeBundle(manifest);
    const expected = { violations: [{ code: 'PLUGIN_BUNDLE_UNSUPPORTED', pointer: '/server/mcp_config/command' }] };
    expect((await host.inspect(bundle))._unsafeUnwrap().report).toMatchObject(expected);
    expect((await host.install(bundle, { canary: false }))._unsafeUnwrapErr().details).toMatchObject(expected);
    expect(await stat(marker).then(() => true, () => false)).toBe(false);
  });

  it('refuses a setting the bundle does not have', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile());
    const refused = (await host.install(await probeBundle(probeManifest()), { canary: false, settings: { colour: 'red' } }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { violations: [{ pointer: '/settings/colour' }] } });
  });
});
