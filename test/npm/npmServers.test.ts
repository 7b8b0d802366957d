/**
 * npm servers installed as they are published (issue 14): `npm:<name>@<version>`
 * fetched by npm from the registry with their production dependencies, no
 * manifest given (the host reads tools/list in a sandboxed start), and called
 * under the sandbox, unmodified. A local tarball made by `npm pack` whose
 * install scripts would write a marker file installs without running them.
 */
import { execFileSync } from 'node:child_process';
import { access, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PACKAGE_TREE_LIST_NAME } from '../../src/binding/packageTree.js';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packGreeterServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const root = join(import.meta.dirname, '..', '..');
const devVersion = async (name: string): Promise<string> =>
  (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name]?.replace(/^[\^~]/, '') ??
  'missing';

/** The files the install root holds, as the tree pin must count them (the list itself excluded). */
async function filesUnder(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile() && entry.name !== PACKAGE_TREE_LIST_NAME).length;
}

async function installNpm(spec: string, options: { args?: readonly string[] } = {}) {
  const dir = await pool.profile();
  const installer = await pool.open(dir, { profileKind: 'standard' });
  const installed = await installer.install(`npm:${spec}`, { canary: false, ...options });
  if (installed.isErr()) throw installed.error;
  await installer.close();
  return { dir, host: await pool.open(dir, { profileKind: 'standard' }), plugin: installed.value.plugin };
}

// npm fetches from the registry and each server starts twice (introspection, call): give a loaded machine room.
const NPM_TIMEOUT = { timeout: 180_000 };

describe('npm: installs of published servers, no manifest given', NPM_TIMEOUT, () => {
  it('@modelcontextprotocol/server-everything: introspected, pinned as a whole tree, called in the sandbox', async () => {
    const version = await devVersion('@modelcontextprotocol/server-everything');
    const { host, plugin } = await installNpm(`@modelcontextprotocol/server-everything@${version}`);
    expect(plugin.name).toBe('server-everything');
    expect(plugin.version).toBe(version);

    const lock = JSON.parse(await readFile(join(host.profileDir, 'plugins.lock'), 'utf8')) as {
      plugins: Record<string, { package: { source: string }; binding: { install_root: string; tree: { files: number } } }>;
    };
    const row = lock.plugins['server-everything'];
    expect(row?.package.source).toBe(`npm:@modelcontextprotocol/server-everything@${version}`);
    const installRoot = row?.binding.install_root ?? '';
    // The whole tree npm laid out is pinned: the package and every dependency below its node_modules.
    expect(row?.binding.tree.files).toBeGreaterThan(1000);
    expect(row?.binding.tree.files).toBe(await filesUnder(installRoot));
    const list = (await readFile(join(installRoot, PACKAGE_TREE_LIST_NAME), 'utf8')).split('\n');
    expect(list.some((line) => line.endsWith(' node_modules/@modelcontextprotocol/sdk/package.json'))).toBe(true);
    // npm's .bin links stayed out of the tree: nothing below the install root is a link.
    expect(execFileSync('find', [installRoot, '-type', 'l'], { encoding: 'utf8' })).toBe('');

    expect((await host.info('server-everything'))._unsafeUnwrap().risk).toMatch(/^needs_review:/);
    expect(textOf((await host.call('plug.server-everything.echo', { message: 'as published' }, { maxRisk: 'write' }))._unsafeUnwrap())).toBe('Echo: as published');
  });

  it('@modelcontextprotocol/server-memory: risk classes come from the tool annotations, never below write', async () => {
    const version = await devVersion('@modelcontextprotocol/server-memory');
    const { host } = await installNpm(`@modelcontextprotocol/server-memory@${version}`);
    const risks = Object.fromEntries(
      (await host.info('server-memory'))._unsafeUnwrap().operations.map((o) => [o.tool_name, o.risk_class]),
    );
    expect(risks).toMatchObject({ read_graph: 'write', create_entities: 'write', delete_entities: 'destructive' });
    const graph = await host.call('plug.server-memory.read_graph', {}, { maxRisk: 'write' });
    expect(JSON.parse(textOf(graph._unsafeUnwrap()))).toEqual({ entities: [], relations: [] });
  });

  it('@modelcontextprotocol/server-filesystem: started with the data directory as its argument', async () => {
    const version = await devVersion('@modelcontextprotocol/server-filesystem');
    const { dir, host } = await installNpm(`@modelcontextprotocol/server-filesystem@${version}`, { args: ['${data_dir}'] });
    const allowed = await host.call('plug.server-filesystem.list_allowed_directories', {}, { maxRisk: 'write' });
    expect(textOf(allowed._unsafeUnwrap())).toContain(join(dir, 'data', 'server-filesystem'));
  });
});

describe('npm: a local tarball made by npm pack', NPM_TIMEOUT, () => {
  it('installs without running its preinstall, install or postinstall scripts', async () => {
    const work = await pool.profile();
    const marker = join(work, 'scripts-ran');
    const tarball = await packGreeterServer(work, marker);

    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate' });
    const installed = await host.install(`npm:${tarball}`, { canary: false, args: ['--home=${data_dir}'] });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    await expect(access(marker)).rejects.toThrow();
    const risks = Object.fromEntries((await host.info('greeter-npm'))._unsafeUnwrap().operations.map((o) => [o.tool_name, o.risk_class]));
    // Its own readOnlyHint does not make greet read (nobody reviewed it), purge's destructiveHint outweighs its readOnlyHint,
    // and remember, without hints, is destructive as MCP reads it.
    expect(risks).toEqual({ greet: 'write', forget: 'destructive', remember: 'destructive', purge: 'destructive' });
    expect((await host.call('plug.greeter-npm.greet', { name: 'npm' }))._unsafeUnwrapErr().code).toBe('PLUGIN_RISK_NOT_ALLOWED');
    const greeted = await host.call('plug.greeter-npm.greet', { name: 'npm' }, { maxRisk: 'write' });
    expect(textOf(greeted._unsafeUnwrap())).toBe(`Hello, npm (--home=${join(dir, 'data', 'greeter-npm')})`);
    await expect(access(marker)).rejects.toThrow();
  });

  it('introspects a server that prints a banner on stdout, and refuses options that do not apply', async () => {
    const work = await pool.profile();
    const tarball = await packGreeterServer(work, join(work, 'scripts-ran'));
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const wrapped = (await host.wrap(`npm:${tarball}`, { args: ['--banner'] }))._unsafeUnwrap();
    expect(wrapped).toMatchObject({ source: tarball, origin: 'introspection', needs_review: true, manifestFile: 'manifest.json' });
    expect((JSON.parse(wrapped.manifestText) as { advertised_tools: unknown[] }).advertised_tools).toHaveLength(4);

    for (const [option, value] of [['checksum', `sha256:${'0'.repeat(64)}`], ['signature', 'AAAA']] as const) {
      const refused = await host.install(`npm:${tarball}`, { [option]: value });
      expect(refused._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option } });
    }
    const notNpm = await host.install(join(root, 'fixtures/plugins/install-node'), { manifest: { plugin_id: 'x' } });
    expect(notNpm._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'manifest' } });
  });
});
