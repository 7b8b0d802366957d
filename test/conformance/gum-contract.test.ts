/**
 * Seed 000 (GUM plugin contract): the contract's own rules hold for every
 * GUM-form manifest whatever preset the host runs under.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { HostPool } from '../support/hostHarness.js';
import { gumJson, gumTomlText, pairs } from '../manifest/helpers.js';

const neutral = new ManifestValidator({ preset: 'neutral' });

describe('seed 000 §2 manifest fields under the neutral preset', () => {
  it('§2 declared_capabilities.env_allow: GUM_PROFILE is refused with PLUGIN_ENV_PROHIBITED', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['TZ', 'GUM_PROFILE'] };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/1']]);
    expect(neutral.validateValue(doc, 'gum-json')._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('§2 declared_capabilities.env_allow: the _GUM* names are refused too', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['_GUM_SESSION'] };
    expect(pairs(neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/0']]);
  });

  it('§2 cross-references, reserved first-party prefixes: plugin_id "gmail" is refused with PLUGIN_NAMESPACE_CONFLICT', () => {
    const doc = { ...gumJson(), plugin_id: 'gmail' };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id']]);
  });

  it('§2 cross-references, reserved first-party prefixes: "gmail-labels" is reserved, "gmailer" is not', () => {
    expect(pairs(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmail-labels' }, 'gum-json')._unsafeUnwrap().violations)).toEqual([
      ['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id'],
    ]);
    expect(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmailer' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the TOML form is held to the same rules (the plugin id is [plugin].name)', () => {
    const text = gumTomlText().replace('name = "fli"', 'name = "drive"');
    const report = neutral.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin/name']]);
  });

  it('§2 first-party bundled plugins may claim a reserved prefix', () => {
    const firstParty = new ManifestValidator({ preset: 'neutral', firstParty: true });
    expect(firstParty.inspectValue({ ...gumJson(), plugin_id: 'gmail' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the valid example manifest still passes under neutral', () => {
    expect(neutral.inspectValue(gumJson(), 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });
});

describe('seed 000 §2 install through PluginHost under the default preset', () => {
  const pool = new HostPool();
  const packages: string[] = [];
  afterEach(() => pool.cleanup());
  afterAll(() => Promise.all(packages.map((dir) => rm(dir, { recursive: true, force: true }))));

  /** The host-ndjson fixture package with its manifest bent by `edit`. */
  async function bentPackage(edit: (manifest: Record<string, unknown>) => void): Promise<string> {
    const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-ndjson'), { bundle: ['bin/echo.mjs'] });
    packages.push(dir);
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    edit(manifest);
    await writeFile(path, JSON.stringify(manifest));
    return dir;
  }

  it('§2 declared_capabilities.env_allow: a neutral host refuses to install a GUM manifest allowing GUM_PROFILE', async () => {
    const host = await pool.open(await pool.profile());
    const pkg = await bentPackage((m) => {
      m.declared_capabilities = { network: false, fs_write_dir: '', env_allow: ['GUM_PROFILE'] };
    });
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('§2 reserved first-party prefixes: a neutral host refuses to install a GUM manifest with plugin_id "gmail"', async () => {
    const host = await pool.open(await pool.profile());
    const pkg = await bentPackage((m) => {
      m.plugin_id = 'gmail';
    });
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrapErr().code).toBe('PLUGIN_NAMESPACE_CONFLICT');
  });
});
