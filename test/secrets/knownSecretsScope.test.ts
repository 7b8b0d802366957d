/**
 * Which granted values the host redacts for every plugin: a grant of USER
 * and LANG passes ordinary words, and blanking them in another plugin's
 * audit records would destroy the record (`chown ann:ann`), so only granted
 * names that read as secrets (the audit's secret field names, here TOKEN)
 * join the host-wide redactor; the plugin's own stderr still has all of its
 * granted values redacted. Real npm install, real sandboxed plugins.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AuditRecord, AuditSink } from '../../src/audit/auditRecord.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';
import { packServer, TOKEN_SERVER } from '../npm/npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

class KeptRecords implements AuditSink {
  readonly records: AuditRecord[] = [];
  write(record: AuditRecord): void {
    this.records.push(record);
  }
}

describe('granted values the host redacts for every plugin', { timeout: 180_000 }, () => {
  it('are those whose names read as secrets: a granted USER and LANG stay in another plugin\'s audit args, a granted TOKEN does not', async () => {
    const token = 'tok-8d2e5a-granted-secret';
    const user = 'annq2user';
    const lang = 'fr_FR.UTF-8';
    const kept = new KeptRecords();
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const host = await pool.open(await pool.profile(), {
      activation: 'immediate',
      env: { ...process.env, TOKEN: token, USER: user, LANG: lang },
      audit: { sink: kept, arguments: true },
    });
    const installed = await host.install(`npm:${tarball}`, { canary: false, grant: { network: false, fs_write_dir: '', env_allow: ['TOKEN', 'USER', 'LANG'] } });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    // The call launches token-server with its grant: from then on the host knows its values.
    expect((await host.call('plug.token-server.whoami', {}, { maxRisk: 'destructive' })).isOk()).toBe(true);
    const canary = await host.install(await packaged('canary'));
    expect(canary.isOk(), JSON.stringify(canary.isErr() ? canary.error : null)).toBe(true);
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: 'good-5b1c9e0d7a3f2468' }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const city = `chown ${user}:${user} ${lang} ${token}`;
    expect((await host.call('plug.host-canary.lookup', { from: '2026-03-01', to: '2026-03-02', city })).isOk()).toBe(true);
    const record = kept.records.find((r) => r.kind === 'call' && r.op_id === 'plug.host-canary.lookup' && JSON.stringify(r).includes('2026-03-02'));
    expect(record).toMatchObject({ arguments: { city: `chown ${user}:${user} ${lang} [redacted]` } });
  });
});
