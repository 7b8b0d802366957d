/**
 * The install grant through PluginHost, with the probe plugin (declares
 * env_allow PROBE_GREETING, no network, no write dir): a grant narrows what
 * the plugin really gets, is recorded in the lock and shown by info() across
 * a reopen; a grant beyond the declaration installs nothing.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, jsonOf, packaged, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const parentEnv = { PATH: '/usr/bin:/bin', PROBE_GREETING: 'hello' };

async function probeEnv(host: Awaited<ReturnType<HostPool['open']>>): Promise<Record<string, string>> {
  return jsonOf<{ data: { env: Record<string, string> } }>((await host.call('plug.host-probe.env', {}))._unsafeUnwrap()).data.env;
}

async function lockRow(dir: string): Promise<Record<string, unknown>> {
  const lock = JSON.parse(await readFile(join(dir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, Record<string, unknown>> };
  return lock.plugins['host-probe'] ?? {};
}

describe('install grant', () => {
  it('narrows the declaration: the plugin gets only what was granted, recorded in the lock and shown by info after a reopen', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { env: parentEnv });
    const installed = (await installer.install(await packaged('probe'), { canary: false, grant: { env_allow: [] } }))._unsafeUnwrap();
    expect(installed.plugin.granted_capabilities).toEqual({ network: false, fs_write_dir: '', env_allow: [], basis: 'declared', grant: { env_allow: [] } });
    await installer.close();
    expect(await lockRow(dir)).toMatchObject({ grant: { env_allow: [] } });

    const host = await pool.open(dir, { env: parentEnv });
    expect(Object.keys(await probeEnv(host))).not.toContain('PROBE_GREETING');
    const info = (await host.info('host-probe'))._unsafeUnwrap();
    expect(info.granted_capabilities).toMatchObject({ env_allow: [], grant: { env_allow: [] } });
    expect(info.enforced_capabilities?.network).toBe(false);
  });

  it('installs again under another grant from the same package, and without a grant the declaration applies', async () => {
    const dir = await pool.profile();
    const first = await pool.open(dir, { env: parentEnv });
    const pkg = await packaged('probe');
    (await first.install(pkg, { canary: false, grant: { env_allow: [] } }))._unsafeUnwrap();
    // The declaration gives back the name the grant withheld: a power the installed plugin lacks, which someone must accept.
    expect((await first.install(pkg, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'capabilities_widened' } });
    const again = (await first.install(pkg, { canary: false, accept: () => true }))._unsafeUnwrap();
    expect(again.unchanged).toBeUndefined();
    expect(again.plugin.granted_capabilities).toEqual({ network: false, fs_write_dir: '', env_allow: ['PROBE_GREETING'], basis: 'declared', grant: null });
    expect(await lockRow(dir)).not.toHaveProperty('grant');
    expect((await first.install(pkg, { canary: false }))._unsafeUnwrap().unchanged).toBe(true);
    await first.close();
    const host = await pool.open(dir, { env: parentEnv });
    expect(await probeEnv(host)).toMatchObject({ PROBE_GREETING: 'hello' });
  });

  it('refuses a grant beyond the declaration with PLUGIN_GRANT_EXCEEDS_DECLARATION, a hint naming the field, and installs nothing', async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir);
    for (const [grant, field] of [
      [{ network: true }, 'network'],
      [{ env_allow: ['PROBE_GREETING', 'TZ'] }, 'env_allow'],
      [{ fs_write_dir: 'notes' }, 'fs_write_dir'],
    ] as const) {
      const refused = (await host.install(await packaged('probe'), { canary: false, grant }))._unsafeUnwrapErr();
      expect(refused.code).toBe('PLUGIN_GRANT_EXCEEDS_DECLARATION');
      expect(refused.hint).toContain(`grant.${field}`);
      expect(refused.details).toMatchObject({ violations: [{ pointer: `/grant/${field}`, code: 'PLUGIN_GRANT_EXCEEDS_DECLARATION' }] });
    }
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
    const inspected = (await host.inspect(await packaged('probe'), { grant: { network: true } }))._unsafeUnwrap();
    expect(inspected.report.violations.map((v) => v.code)).toEqual(['PLUGIN_GRANT_EXCEEDS_DECLARATION']);
    expect((await host.install(await packaged('probe'), { grant: { network: 'yes' } as never }))._unsafeUnwrapErr()).toMatchObject({
      code: 'HOST_INVALID_OPTIONS',
      details: { option: 'grant.network' },
    });
  });
});
