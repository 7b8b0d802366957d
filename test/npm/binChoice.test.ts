/**
 * Choosing which executable of an npm package is its MCP server (the `bin`
 * install option, `--bin`). Published packages ship their server as a second
 * bin beside a CLI: bunqueue's `bunqueue-mcp`, many `<name>-mcp`. The host
 * used to run the bin named like the package (the CLI, which is no MCP
 * server) or refuse a package with several bins and none so named, with no
 * way to name the right one. The packages are packed locally with `npm pack`;
 * the installs run for real (npm, the sandboxed introspection, the CLI).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostError } from '../../src/index.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { cli, json, tempDir } from '../cli/cliHarness.js';

const SLOW = 180_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// A command-line tool that is not an MCP server: it prints its usage and exits, as a CLI run without a command does.
const CLI = `#!/usr/bin/env node
process.stdout.write('usage: queue <command>\\n');
process.exit(1);
`;

// The MCP server, with one tool whose answer names the bin that serves it.
const MCP = (name: string): string => `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: '${name}', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'enqueue', description: 'Queues a job', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'queued by ${name}' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

/** Packs `name@version` with `bins` (bin name → source) into `dir`; returns the tarball. */
async function packBins(dir: string, name: string, version: string, bins: Readonly<Record<string, string>>): Promise<string> {
  const pkg = join(dir, `${name}-${version}`);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  for (const [bin, source] of Object.entries(bins)) await writeFile(join(pkg, 'bin', `${bin}.mjs`), source, { mode: 0o755 });
  const bin = Object.fromEntries(Object.keys(bins).map((b) => [b, `bin/${b}.mjs`]));
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version, type: 'module', license: 'MIT', bin }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-${version}.tgz`);
}

const lockRow = async (profile: string, id: string): Promise<{ package: { bin?: string }; version: string } | undefined> =>
  (JSON.parse(await readFile(join(profile, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { package: { bin?: string }; version: string }> }).plugins[id];

const failure = (result: { isErr(): boolean; _unsafeUnwrapErr(): HostError }): HostError => {
  expect(result.isErr()).toBe(true);
  return result._unsafeUnwrapErr();
};

describe('npm: the bin install option', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  // queuekit: a CLI and the MCP server, neither named like the package; 2.0.0 the same; 3.0.0 renamed the server's bin.
  let v1: string;
  let v2: string;
  let v3: string;
  // bunq: the bin named like the package is the CLI, the server is bunq-mcp (bunqueue's layout).
  let bunq: string;
  beforeAll(async () => {
    dir = await tempDir('npm-bin-');
    v1 = await packBins(dir.path, 'queuekit', '1.0.0', { 'queuekit-cli': CLI, 'queuekit-mcp': MCP('queuekit-mcp') });
    v2 = await packBins(dir.path, 'queuekit', '2.0.0', { 'queuekit-cli': CLI, 'queuekit-mcp': MCP('queuekit-mcp') });
    v3 = await packBins(dir.path, 'queuekit', '3.0.0', { 'queuekit-cli': CLI, 'queuekit-server': MCP('queuekit-server') });
    bunq = await packBins(dir.path, 'bunq', '1.0.0', { bunq: CLI, 'bunq-mcp': MCP('bunq-mcp') });
  });
  afterAll(() => dir.dispose());

  it('names the bins and --bin when several bins have none named like the package; an unknown bin is refused with the list', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const none = failure(await host.install(`npm:${v1}`, { canary: false }));
    expect(none.code).toBe('PLUGIN_NPM_INSTALL_FAILED');
    expect(none.details).toMatchObject({ reason: 'no_bin', bins: ['queuekit-cli', 'queuekit-mcp'] });
    expect(none.hint).toContain("'queuekit-cli', 'queuekit-mcp'");
    expect(none.hint).toContain('--bin');

    const unknown = failure(await host.install(`npm:${v1}`, { canary: false, bin: 'queuekit' }));
    expect(unknown.code).toBe('PLUGIN_NPM_INSTALL_FAILED');
    expect(unknown.details).toMatchObject({ reason: 'unknown_bin', bin: 'queuekit', bins: ['queuekit-cli', 'queuekit-mcp'] });
    expect(unknown.message).toContain("has no bin named 'queuekit'");
    expect(unknown.hint).toContain("'queuekit-cli', 'queuekit-mcp'");
    expect(await lockRow(profile, 'queuekit').catch(() => undefined)).toBeUndefined();
  });

  it('runs the named bin, records it, keeps it for an upgrade, and refuses an upgrade whose version lacks it', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const installed = (await host.install(`npm:${v1}`, { canary: false, bin: 'queuekit-mcp' }))._unsafeUnwrap();
    expect(installed.plugin.executable.path).toMatch(/bin\/queuekit-mcp\.mjs$/);
    expect(installed.plugin.operations.map((o) => o.op_id)).toEqual(['plug.queuekit.enqueue']);
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ version: '1.0.0', package: { bin: 'queuekit-mcp' } });

    // No bin named: the one recorded serves again (without it, this version would fail with no_bin).
    const upgraded = (await host.install(`npm:${v2}`, { canary: false }))._unsafeUnwrap();
    expect(upgraded.plugin.version).toBe('2.0.0');
    expect(upgraded.plugin.executable.path).toMatch(/bin\/queuekit-mcp\.mjs$/);
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ version: '2.0.0', package: { bin: 'queuekit-mcp' } });

    const renamed = failure(await host.install(`npm:${v3}`, { canary: false }));
    expect(renamed.code).toBe('PLUGIN_NPM_INSTALL_FAILED');
    expect(renamed.details).toMatchObject({ reason: 'unknown_bin', bin: 'queuekit-mcp', recorded: true, bins: ['queuekit-cli', 'queuekit-server'] });
    expect(renamed.message).toContain('recorded in the lock');
    expect(renamed.hint).toContain("'queuekit-server'");
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ version: '2.0.0' });

    // Naming the new bin upgrades, and records it.
    const named = (await host.install(`npm:${v3}`, { canary: false, bin: 'queuekit-server' }))._unsafeUnwrap();
    expect(named.plugin.version).toBe('3.0.0');
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ version: '3.0.0', package: { bin: 'queuekit-server' } });
  });

  // Remove keeps what the plugin was accepted with (its powers, tools, signer) with its owner: the bin those tools came from stays too.
  it('keeps the chosen bin across a remove: a reinstall naming none runs the same server', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    (await host.install(`npm:${v1}`, { canary: false, bin: 'queuekit-mcp' }))._unsafeUnwrap();
    (await host.remove('queuekit'))._unsafeUnwrap();
    const owners = async (): Promise<Record<string, { bin?: string }>> =>
      (JSON.parse(await readFile(join(profile, 'plugins.lock'), 'utf8')) as { namespace_owners: Record<string, { bin?: string }> }).namespace_owners;
    expect((await owners())['queuekit']).toMatchObject({ bin: 'queuekit-mcp' });
    // Without the record this fails with no_bin (two bins, none named like the package).
    const again = (await host.install(`npm:${v2}`, { canary: false }))._unsafeUnwrap();
    expect(again.plugin.executable.path).toMatch(/bin\/queuekit-mcp\.mjs$/);
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ version: '2.0.0', package: { bin: 'queuekit-mcp' } });
    // A version without it says where the name came from; naming another bin replaces the record at the next remove.
    (await host.remove('queuekit'))._unsafeUnwrap();
    expect(failure(await host.install(`npm:${v3}`, { canary: false })).details).toMatchObject({ reason: 'unknown_bin', bin: 'queuekit-mcp', recorded: true });
    (await host.install(`npm:${v3}`, { canary: false, bin: 'queuekit-server' }))._unsafeUnwrap();
    (await host.remove('queuekit'))._unsafeUnwrap();
    expect((await owners())['queuekit']).toMatchObject({ bin: 'queuekit-server' });
  });

  it('runs a second bin when the one named like the package is a CLI (bunqueue-mcp beside bunqueue)', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    // wrap names the same bin: the manifest to review runs the server, not the CLI.
    const wrapped = (await host.wrap(`npm:${bunq}`, { bin: 'bunq-mcp' }))._unsafeUnwrap();
    expect(JSON.parse(wrapped.manifestText)).toMatchObject({ executable: 'bin/bunq-mcp.mjs', advertised_tools: [{ name: 'enqueue' }] });
    // The default is the CLI, which answers no initialize.
    expect((await host.install(`npm:${bunq}`, { canary: false })).isErr()).toBe(true);
    const installed = (await host.install(`npm:${bunq}`, { canary: false, bin: 'bunq-mcp' }))._unsafeUnwrap();
    expect(installed.plugin.executable.path).toMatch(/bin\/bunq-mcp\.mjs$/);
    expect(installed.plugin.operations.map((o) => o.op_id)).toEqual(['plug.bunq.enqueue']);
  });

  // @storybook/mcp declares no bin: a library its addon serves. The hint said only to check the package declares a bin.
  it('says a package with no bin may be a library, and that a manifest, not --bin, names a file of it as the server', { timeout: SLOW }, async () => {
    const pkg = join(dir.path, 'libkit');
    await mkdir(join(pkg, 'dist'), { recursive: true });
    await writeFile(join(pkg, 'dist', 'server.mjs'), MCP('libkit'), { mode: 0o755 });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'libkit', version: '1.0.0', type: 'module', license: 'MIT', main: 'dist/server.mjs' }));
    execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir.path], { cwd: pkg, stdio: 'ignore' });
    const tarball = join(dir.path, 'libkit-1.0.0.tgz');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const none = failure(await host.install(`npm:${tarball}`, { canary: false }));
    expect(none.code).toBe('PLUGIN_NPM_INSTALL_FAILED');
    expect(none.details).toMatchObject({ reason: 'no_bin', bins: [] });
    expect(none.message).toContain("npm package 'libkit' declares no executable (no bin in its package.json)");
    expect(none.hint).toMatch(/^This package has no executable \(bin\); it may be a library, not a server/);
    expect(none.hint).toContain('--manifest <file>');
    // What the hint names works: a manifest whose executable is the file.
    const manifest = { manifest_schema_version: 1, plugin_id: 'libkit', name: 'libkit', version: '1.0.0', namespace_owner: 'io.example.libkit', shape: 'mcp-plugin', executable: 'dist/server.mjs', advertised_tools: [{ name: 'enqueue', description: 'Queues a job', risk_class: 'write' }], declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] } };
    const result = await host.install(`npm:${tarball}`, { canary: false, manifest });
    if (result.isErr()) throw result.error;
    const installed = result.value;
    expect(installed.plugin.executable.path).toMatch(/dist\/server\.mjs$/);
  });

  it('refuses the option beside a manifest, and for a source that is not npm:', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const manifest = { manifest_schema_version: 1, plugin_id: 'queuekit', name: 'queuekit', version: '1.0.0', shape: 'mcp-plugin', executable: 'bin/queuekit-mcp.mjs', advertised_tools: [] };
    const beside = failure(await host.install(`npm:${v1}`, { canary: false, bin: 'queuekit-mcp', manifest }));
    expect(beside.details).toMatchObject({ reason: 'manifest_conflict', bin: 'queuekit-mcp' });
    const directory = failure(await host.install(dir.path, { canary: false, bin: 'queuekit-mcp' }));
    expect(directory.code).toBe('HOST_INVALID_OPTIONS');
    expect(directory.details).toMatchObject({ option: 'bin' });
  });
});

describe('npm: install --bin through the CLI', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let tarball: string;
  beforeAll(async () => {
    dir = await tempDir('cli-bin-');
    tarball = await packBins(dir.path, 'queuekit', '1.0.0', { 'queuekit-cli': CLI, 'queuekit-mcp': MCP('queuekit-mcp') });
  });
  afterAll(() => dir.dispose());

  it('fails without --bin, naming the bins and the flag; installs and serves with it', { timeout: SLOW }, async () => {
    const profile = join(dir.path, 'profile');
    const wrapped = await cli(['wrap', `npm:${tarball}`, '--bin', 'queuekit-mcp', '--json', '--profile-dir', profile]);
    expect(JSON.parse(String(json(wrapped)['manifest']))).toMatchObject({ executable: 'bin/queuekit-mcp.mjs' });
    const without = await cli(['install', `npm:${tarball}`, '--yes', '--skip-canary', '--profile-dir', profile, '--json']);
    expect(without.code).not.toBe(0);
    const error = (json(without) as { error: { code: string; hint: string; details: Record<string, unknown> } }).error;
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'no_bin' } });
    expect(error.hint).toContain("'queuekit-cli', 'queuekit-mcp'");
    expect(error.hint).toContain('--bin <name>');

    const withBin = await cli(['install', `npm:${tarball}`, '--bin', 'queuekit-mcp', '--yes', '--skip-canary', '--profile-dir', profile]);
    expect(withBin.code, withBin.stderr).toBe(0);
    expect(await lockRow(profile, 'queuekit')).toMatchObject({ package: { bin: 'queuekit-mcp' } });
    const ran = await cli(['run', 'queuekit', 'enqueue', '{}', '--max-risk', 'destructive', '--yes', '--profile-dir', profile]);
    expect(ran.stdout + ran.stderr).toContain('queued by queuekit-mcp');
  });
});
