/**
 * One audit record per PluginHost.call, with a real plugin process and a
 * real JSONL file: caller identity, op id, plugin version and code digest,
 * outcome code, duration; arguments only when the host opts in, redacted.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AuditCallRecord, AuditRecord, AuditSink } from '../../src/audit/auditRecord.js';
import { JsonlAuditSink } from '../../src/audit/JsonlAuditSink.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

/** A sink that keeps records in memory, for the tests that only look at record contents. */
class KeptRecords implements AuditSink {
  readonly records: AuditRecord[] = [];
  write(record: AuditRecord): void {
    this.records.push(record);
  }
}

describe('PluginHost audit records', () => {
  it(
    'writes one record per call to a JSONL file: caller, op id, plugin version and code digest, outcome and duration, and no arguments by default',
    async () => {
      const profile = await pool.profile();
      const file = join(profile, 'audit.jsonl');
      const sink = await JsonlAuditSink.open(file);
      if (sink.isErr()) throw sink.error;
      const host = await pool.installed(profile, ['probe'], { audit: { sink: sink.value } });
      const caller = { id: 'alice', session: 's-1', transport: 'test' };

      expect((await host.call('plug.host-probe.echo', { text: 'hi', password: 'hunter2' }, { caller })).isOk()).toBe(true);
      const refused = await host.call('plug.host-probe.wipe', {}, { caller });
      expect(refused.isErr() && refused.error.code).toBe('PLUGIN_RISK_NOT_ALLOWED');
      const unknown = await host.call('plug.host-probe.nope', {});
      expect(unknown.isErr() && unknown.error.code).toBe('VARIANT_NOT_FOUND');
      await sink.value.close();

      const records = (await readFile(file, 'utf8'))
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as AuditCallRecord);
      expect(records).toHaveLength(3);
      const [echo, wipe, nope] = records;
      expect(echo).toMatchObject({ kind: 'call', caller, op_id: 'plug.host-probe.echo', plugin_id: 'host-probe', plugin_version: '1.0.0', outcome: 'ok' });
      expect(echo?.code_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(echo?.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Date.parse(echo?.at ?? '')).not.toBeNaN();
      expect(echo).not.toHaveProperty('arguments');
      expect(JSON.stringify(records)).not.toContain('hunter2');
      expect(wipe).toMatchObject({ caller, op_id: 'plug.host-probe.wipe', plugin_id: 'host-probe', outcome: 'PLUGIN_RISK_NOT_ALLOWED' });
      expect(nope).toMatchObject({ op_id: 'plug.host-probe.nope', outcome: 'VARIANT_NOT_FOUND' });
      expect(nope).not.toHaveProperty('plugin_id');
      expect(nope).not.toHaveProperty('caller');
    },
    TIMEOUT_MS,
  );

  it(
    'records arguments when the host opts in, with declared secret fields redacted',
    async () => {
      const kept = new KeptRecords();
      const host = await pool.installed(await pool.profile(), ['probe'], { audit: { sink: kept, arguments: true, secretFields: ['pin'] } });
      const args = { text: 'hi', api_key: 'k-123', nested: { pin: '0000', keep: true }, argv: ['--token', 't-456'], url: 'https://ann:pw-789@example.com/?pin=1357' };
      expect((await host.call('plug.host-probe.echo', args)).isOk()).toBe(true);
      expect(kept.records).toHaveLength(1);
      expect(kept.records[0]).toMatchObject({
        outcome: 'ok',
        arguments: { text: 'hi', api_key: '[redacted]', nested: { pin: '[redacted]', keep: true }, argv: ['--token', '[redacted]'], url: 'https://ann:[redacted]@example.com/?pin=[redacted]' },
      });
    },
    TIMEOUT_MS,
  );

  it(
    'records an argument named __proto__ as the plugin receives it, redacted inside, instead of dropping it (review R11 F2)',
    async () => {
      const kept = new KeptRecords();
      const host = await pool.installed(await pool.profile(), ['probe'], { audit: { sink: kept, arguments: true } });
      // What a gateway client's JSON body becomes: an own key `__proto__`, which JSON.stringify sends on to the plugin.
      const args = JSON.parse('{"message":"hi","__proto__":{"path":"/etc/shadow","password":"hunter2"}}') as Record<string, unknown>;
      expect(JSON.stringify(args)).toContain('"__proto__":{"path":"/etc/shadow"');
      await host.call('plug.host-probe.echo', args);
      expect(kept.records).toHaveLength(1);
      const line = JSON.stringify(kept.records[0]);
      expect(line).toContain('"arguments":{"message":"hi","__proto__":{"path":"/etc/shadow","password":"[redacted]"}}');
      expect(line).not.toContain('hunter2');
    },
    TIMEOUT_MS,
  );

  it(
    'redacts the secret values the host gave a plugin, and their encoded copies, wherever a call\'s arguments carry them',
    async () => {
      const kept = new KeptRecords();
      const host = await pool.open(await pool.profile(), { activation: 'immediate', audit: { sink: kept, arguments: true } });
      (await host.install(await packaged('canary')))._unsafeUnwrap();
      const token = 'good-7e51a0c2d9f3b864';
      // The live canary launches the plugin with the stored token: the host knows it from then on.
      expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
      const b64 = Buffer.from(token).toString('base64');
      const args = { from: '2026-02-01', to: '2026-02-03', city: token, note: `seen as ${b64} in a header`, list: [Buffer.from(token).toString('hex')] };
      expect((await host.call('plug.host-canary.lookup', args)).isOk()).toBe(true);
      const record = kept.records.find((r) => r.kind === 'call' && r.op_id === 'plug.host-canary.lookup' && r.at !== undefined && JSON.stringify(r).includes('2026-02-03'));
      expect(record).toMatchObject({ outcome: 'ok', arguments: { city: '[redacted]', note: 'seen as [redacted] in a header', list: ['[redacted]'] } });
      expect(JSON.stringify(kept.records)).not.toContain(token);
    },
    TIMEOUT_MS,
  );

  it('refuses an audit option without a sink', async () => {
    const { PluginHost } = await import('../../src/host/PluginHost.js');
    const opened = await PluginHost.open({ profileDir: await pool.profile(), audit: {} as never });
    expect(opened.isErr() && opened.error.code).toBe('HOST_INVALID_OPTIONS');
    expect(opened.isErr() && opened.error.details.option).toBe('audit.sink');
  });
});
