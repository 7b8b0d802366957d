/**
 * A start's capability pin judges which file of the install root is the
 * manifest as the install does (chooseManifest): an install root holding two
 * plugin manifests, which only an install from before that rule made (the
 * tree pin refuses files added since), gets PLUGIN_MANIFEST_AMBIGUOUS with a
 * hint to reinstall instead of powers read from whichever file came first.
 * Real files; the installed plugin is the catalog's record of it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstalledPlugin } from '../../src/catalog/catalogContents.js';
import { pinnedCapabilities } from '../../src/host/pinnedCapabilities.js';
import { gumJson, gumTomlText } from '../manifest/helpers.js';

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

async function installRoot(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pinned-legacy-'));
  roots.push(root);
  for (const [name, text] of Object.entries(files)) await writeFile(join(root, name), text);
  return root;
}

/** The plugin as the catalog records it: the powers the install computed from manifest.json (fli.json: network, no write dir, FLI_USER_AGENT). */
function installed(root: string, pluginId: string): InstalledPlugin {
  const capabilities = { network: true, fs_write_dir: '', env_allow: ['FLI_USER_AGENT'] };
  return {
    profile: 'p',
    plugin_id: pluginId,
    lock: { binding: { install_root: root } },
    state: undefined,
    variants: [],
    descriptor: { capabilities },
  } as unknown as InstalledPlugin;
}

describe('the capability pin of an install root holding two manifests', () => {
  it('starts a root with one manifest with the powers it declares', async () => {
    const root = await installRoot({ 'manifest.json': JSON.stringify(gumJson()) });
    expect((await pinnedCapabilities(installed(root, 'fli-one')))._unsafeUnwrap()).toMatchObject({ network: true, env_allow: ['FLI_USER_AGENT'] });
  });

  it('refuses a root with a GUM manifest.json and a plugin.toml with PLUGIN_MANIFEST_AMBIGUOUS and a reinstall hint', async () => {
    // The first file is the one the old pin read; plugin.toml, which a reviewer may read instead, declares other powers.
    const toml = gumTomlText().replace(/network\s*=\s*true/, 'network = false');
    expect(toml).not.toBe(gumTomlText());
    const root = await installRoot({ 'manifest.json': JSON.stringify(gumJson()), 'plugin.toml': toml });
    const refused = (await pinnedCapabilities(installed(root, 'fli-two')))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_MANIFEST_AMBIGUOUS', details: { manifest_files: ['manifest.json', 'plugin.toml'], install_root: root } });
    expect(refused.hint).toMatch(/Install the plugin again from a package that ships one manifest/);
  });

  it('reads an MCP Bundle manifest.json beside one GUM manifest as the bundle, as the install did', async () => {
    const bundle = { manifest_version: '0.3', name: 'b', version: '1.0.0', description: 'd', author: { name: 'a' }, server: { type: 'binary', entry_point: 'bin/hello' } };
    const root = await installRoot({ 'manifest.json': JSON.stringify(bundle), 'plugin.toml': gumTomlText() });
    // A bundle declares nothing: the host default, which the catalog records here as network false, no env, no write dir.
    const plugin = { ...installed(root, 'bundle-beside-toml'), descriptor: { capabilities: { network: false, fs_write_dir: null, env_allow: [] } } } as unknown as InstalledPlugin;
    const pinned = await pinnedCapabilities(plugin);
    expect(pinned.isErr() ? pinned.error.code : 'ok').not.toBe('PLUGIN_MANIFEST_AMBIGUOUS');
  });
});
