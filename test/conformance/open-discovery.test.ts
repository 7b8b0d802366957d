/**
 * Seed 003 (MCP Open Discovery registry integration): behaviour of the
 * manifest-first loader for installed `esm-module` plugins, run for real
 * through PluginHost (the ESM runner in the OS sandbox).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { esmLoaderOptionsFromEnv } from '../../src/shapes/esm/EsmLoaderOptions.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
let runner: BuiltRunner;
let pkg = '';

describe('seed 003 Directory layout alignment: PLUGIN_INSTALL_DIR or PLUGINS_BASE_DIR, the first present', () => {
  it('Directory layout alignment: PLUGINS_BASE_DIR names the install directory when PLUGIN_INSTALL_DIR is not set; PLUGIN_INSTALL_DIR wins', () => {
    expect(esmLoaderOptionsFromEnv({ PLUGINS_BASE_DIR: '/srv/tools/plugins' })._unsafeUnwrap().pluginInstallDir).toBe('/srv/tools/plugins');
    expect(esmLoaderOptionsFromEnv({ PLUGINS_BASE_DIR: '/srv/tools/plugins', PLUGIN_INSTALL_DIR: '/srv/od/plugins' })._unsafeUnwrap().pluginInstallDir).toBe('/srv/od/plugins');
    expect(esmLoaderOptionsFromEnv({})._unsafeUnwrap().pluginInstallDir).toBe('./plugins');
  });
});

describe('seed 003 Notes & Behavior: title precedence for tools is config.title > annotations.title > name', () => {
  beforeAll(async () => {
    runner = await buildEsmRunner();
    pkg = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/esm-titles'));
  }, 120_000);
  afterEach(() => pool.cleanup());
  afterAll(async () => {
    await runner.remove();
    await rm(pkg, { recursive: true, force: true });
  });

  it('Notes & Behavior: the listed title is the config title, else the annotations title, else the tool name', async () => {
    const host = await pool.open(await pool.profile(), { esmRunnerArgv: runner.argv, activation: 'immediate' });
    (await host.install(pkg, { canary: false }))._unsafeUnwrap();
    const tools = (await host.tools('titles'))._unsafeUnwrap();
    expect(Object.fromEntries(tools.map((t) => [t.name, t.title]))).toEqual({
      both: 'From the config',
      annotated: 'From the annotations only',
      plain: 'plain',
    });
  });
});
