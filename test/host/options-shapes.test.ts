/**
 * The host's options reach every shape they apply to: a host-wide
 * `maxTotalTimeoutMs` caps a call of an MCP plugin, an ndjson-rpc plugin and
 * a handshake plugin alike, though the call itself sets no budget and the
 * host's per-call timeout is far longer.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { HostPool, removePackages, type FixtureName } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

/** A call of each shape's fixture that would answer only long after the cap (or never). */
const SLOW_CALLS: readonly { readonly shape: string; readonly fixture: FixtureName; readonly env?: Record<string, string>; readonly call: (host: PluginHost) => ReturnType<PluginHost['call']> }[] = [
  { shape: 'mcp-plugin', fixture: 'probe', call: (host) => host.call('plug.host-probe.echo', { delayMs: 60_000 }) },
  { shape: 'ndjson-rpc', fixture: 'ndjson', env: { ECHO_MODE: 'concurrent' }, call: (host) => host.call('plug.host-ndjson.echo', { delayMs: 60_000 }) },
  { shape: 'handshake', fixture: 'handshake', call: (host) => host.call('plug.host-handshake.wait', {}) },
];

describe('the host-wide maxTotalTimeoutMs', () => {
  it('caps a call of every shape, which then fails with PLUGIN_TIMEOUT', async () => {
    for (const slow of SLOW_CALLS) {
      const host = await pool.installed(await pool.profile(), [slow.fixture], {
        callTimeoutMs: 120_000,
        maxTotalTimeoutMs: 400,
        ...(slow.env === undefined ? {} : { env: slow.env }),
      });
      const failed = (await slow.call(host))._unsafeUnwrapErr();
      expect(failed.code, slow.shape).toBe('PLUGIN_TIMEOUT');
      expect(JSON.stringify(failed.details), slow.shape).toContain('400');
    }
  }, 40_000);
});

