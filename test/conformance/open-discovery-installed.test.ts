/**
 * Seed 003 for plugins installed through PluginHost: the loader's strict
 * modes (Feature Flags STRICT_CAPABILITIES, STRICT_TOOLS) reach the ESM
 * runner of an installed `esm-module` plugin, run for real in the sandbox.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { EsmHostLoaderOptions } from '../../src/shapes/esm/EsmLoaderOptions.js';
import type { EsmToolUnderValidation } from '../../src/shapes/esm/validateTools.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
let runner: BuiltRunner;
const packages: Record<'strict' | 'blank', string> = { strict: '', blank: '' };

async function callPing(pkg: string, pluginId: string, esmLoader?: EsmHostLoaderOptions): Promise<string> {
  const host = await pool.open(await pool.profile(), { esmRunnerArgv: runner.argv, activation: 'immediate', ...(esmLoader === undefined ? {} : { esmLoader }) });
  (await host.install(pkg, { canary: false }))._unsafeUnwrap();
  const result = await host.call(`plug.${pluginId}.ping`, {});
  return result.isOk() ? 'ok' : result.error.code;
}

describe('seed 003 Feature Flags: STRICT_CAPABILITIES and STRICT_TOOLS for plugins installed through PluginHost', () => {
  beforeAll(async () => {
    runner = await buildEsmRunner();
    packages.strict = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/esm-od-strict'));
    packages.blank = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/esm-od-blank-tool'));
  }, 120_000);
  afterEach(() => pool.cleanup());
  afterAll(async () => {
    await runner.remove();
    await Promise.all(Object.values(packages).map((pkg) => rm(pkg, { recursive: true, force: true })));
  });

  it('Feature Flags STRICT_CAPABILITIES: a declared prompt never registered is a warning by default and fails the start under esmLoader.strictCapabilities', async () => {
    expect(await callPing(packages.strict, 'od-strict')).toBe('ok');
    expect(await callPing(packages.strict, 'od-strict', { strictCapabilities: true })).toBe('PLUGIN_CAPABILITY_MISMATCH');
  }, 120_000);

  it('Feature Flags STRICT_TOOLS / Loader Steps 5: an invalid tool fails the start under esmLoader.strictTools with the loader code', async () => {
    expect(await callPing(packages.blank, 'od-blank-tool', { strictTools: true })).toBe('PLUGIN_TOOL_INVALID');
  }, 120_000);

  it('Loader Steps 5 "Tool Validation": esmLoader.validateTool sees each tool the runner registered and a refusal fails the start with PLUGIN_TOOL_INVALID', async () => {
    const seen: EsmToolUnderValidation[] = [];
    expect(await callPing(packages.strict, 'od-strict', { validateTool: (tool) => (seen.push(tool), []) })).toBe('ok');
    expect(seen.map((t) => [t.plugin, t.name, t.config.description])).toEqual([['od-strict', 'ping', 'Answers pong']]);
    expect(await callPing(packages.strict, 'od-strict', { validateTool: (tool) => (tool.name === 'ping' ? ['ping is not allowed here'] : []) })).toBe('PLUGIN_TOOL_INVALID');
  }, 120_000);
});
