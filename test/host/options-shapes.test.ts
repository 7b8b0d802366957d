/**
 * The host's options reach every shape they apply to: a host-wide
 * `maxTotalTimeoutMs` caps a call of an MCP plugin, an esm-module plugin, an
 * ndjson-rpc plugin and a handshake plugin alike, though the call itself sets no budget and the
 * host's per-call timeout is far longer.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { PluginHost, PluginHostOptions } from '../../src/host/PluginHost.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { HostPool, removePackages, type FixtureName } from '../support/hostHarness.js';

const pool = new HostPool();
let runner: BuiltRunner;
let esmWait: string;
beforeAll(async () => {
  runner = await buildEsmRunner();
  esmWait = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-wait'), { bundle: ['dist/index.mjs'] });
}, 120_000);
afterEach(() => pool.cleanup());
afterAll(async () => {
  await removePackages();
  await runner.remove();
  await rm(esmWait, { recursive: true, force: true });
});

/** A call of each shape's fixture that would answer only long after the cap (or never). */
const SLOW_CALLS: readonly { readonly shape: string; readonly fixture: FixtureName; readonly env?: Record<string, string>; readonly call: (host: PluginHost) => ReturnType<PluginHost['call']> }[] = [
  { shape: 'mcp-plugin', fixture: 'probe', call: (host) => host.call('plug.host-probe.echo', { delayMs: 60_000 }) },
  { shape: 'ndjson-rpc', fixture: 'ndjson', env: { ECHO_MODE: 'concurrent' }, call: (host) => host.call('plug.host-ndjson.echo', { delayMs: 60_000 }) },
  { shape: 'handshake', fixture: 'handshake', call: (host) => host.call('plug.host-handshake.wait', {}) },
];

const CAPPED: PluginHostOptions = { callTimeoutMs: 120_000, maxTotalTimeoutMs: 400 };

describe('the host-wide maxTotalTimeoutMs', () => {
  it('caps a call of every shape, which then fails with PLUGIN_TIMEOUT', async () => {
    const failures = [];
    for (const slow of SLOW_CALLS) {
      const host = await pool.installed(await pool.profile(), [slow.fixture], { ...CAPPED, ...(slow.env === undefined ? {} : { env: slow.env }) });
      failures.push({ shape: slow.shape, error: (await slow.call(host))._unsafeUnwrapErr() });
    }
    const esmOptions = { ...CAPPED, esmRunnerArgv: runner.argv };
    const esmDir = await pool.profile();
    const installer = await pool.open(esmDir, esmOptions);
    (await installer.install(esmWait, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const esmHost = await pool.open(esmDir, esmOptions);
    failures.push({ shape: 'esm-module', error: (await esmHost.call('plug.esm-wait.wait', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr() });

    for (const { shape, error } of failures) {
      expect(error.code, shape).toBe('PLUGIN_TIMEOUT');
      expect(JSON.stringify(error.details), shape).toContain('400');
    }
    expect(failures.map((f) => f.shape).sort()).toEqual(['esm-module', 'handshake', 'mcp-plugin', 'ndjson-rpc']);
  }, 60_000);
});

