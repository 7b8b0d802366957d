/**
 * Seed 003 "Directory layout alignment" and "Feature Flags": the
 * `PLUGIN_INSTALL_DIR/<name>@<version>/` layout as the loader reads it (real
 * directories, plugins loaded in process), and `MARKETPLACE_TOKEN`, the
 * Marketplace auth header, which no plugin can be given.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { EnvDenylist } from '../../src/env/EnvDenylist.js';
import { discoverEsmPlugins } from '../../src/shapes/esm/discoverEsmPlugins.js';
import { loadPlugins } from '../../src/shapes/esm/loadPlugins.js';

const fixture = join(import.meta.dirname, '../../fixtures/plugins/esm-od-strict');
let installDir = '';

async function installAs(name: string, version: string): Promise<void> {
  const root = join(installDir, `${name}@${version}`);
  await mkdir(root, { recursive: true });
  await copyFile(join(fixture, 'index.mjs'), join(root, 'index.mjs'));
  const manifest = { name, version, sdk: '@modelcontextprotocol/sdk', entry: 'index.mjs', capabilities: { tools: [{ name: 'ping' }] } };
  await writeFile(join(root, 'mcp-plugin.json'), JSON.stringify(manifest));
}

afterEach(async () => {
  if (installDir !== '') await rm(installDir, { recursive: true, force: true });
  installDir = '';
});

describe('seed 003 Directory layout alignment: PLUGIN_INSTALL_DIR/<name>@<version>/', () => {
  it('End-to-End Install 3: after upgrades leave net-utils@1.0.0, @1.1.0 and @1.10.0 side by side, the loader loads 1.10.0', async () => {
    installDir = await mkdtemp(join(tmpdir(), 'od-install-'));
    for (const version of ['1.0.0', '1.1.0', '1.10.0']) await installAs('net-utils', version);
    await installAs('dns-tools', '2.0.0');
    const roots = (await discoverEsmPlugins(installDir))._unsafeUnwrap();
    expect(roots.map((root) => basename(root))).toEqual(['dns-tools@2.0.0', 'net-utils@1.10.0']);
    const server = new McpServer({ name: 'od-host', version: '1.0.0' });
    // Every copy registers the same tool, so only the net-utils folders go to one server.
    const netUtils = roots.filter((root) => basename(root).startsWith('net-utils@'));
    const { summary } = (await loadPlugins(server, netUtils, { trust: 'in-process' }))._unsafeUnwrap();
    expect(summary.failed).toEqual([]);
    expect(summary.loaded.map((p) => `${p.name}@${p.version}`)).toEqual(['net-utils@1.10.0']);
    expect(summary.skipped).toEqual([]);
  });
});

describe('seed 003 Feature Flags: MARKETPLACE_TOKEN (auth header for private Marketplace fetches) never reaches a plugin', () => {
  it('Feature Flags MARKETPLACE_TOKEN: an env_allow naming it is refused at install, and the spawn environment drops it', () => {
    const denylist = new EnvDenylist({ preset: 'neutral' });
    expect(denylist.check('od-strict', ['MARKETPLACE_TOKEN'], 'env_allow')._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
    const built = denylist.buildEnv({ parentEnv: { PATH: '/usr/bin', MARKETPLACE_TOKEN: 'mkt-secret' }, envAllow: ['MARKETPLACE_TOKEN'] });
    expect(built.isErr() || !Object.values(built.value).includes('mkt-secret')).toBe(true);
  });
});
