/**
 * Every connection a plugin with a destination list makes through the
 * host's proxy, allowed or refused, is an audit record on the host's sink
 * (a real JSONL file) beside its host `egress` event (refused ones up to a
 * budget per plugin and reason, then in a summary: refusedEventBudget.test.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import type { AuditRecord } from '../../src/audit/auditRecord.js';
import { JsonlAuditSink } from '../../src/audit/JsonlAuditSink.js';
import type { EgressEvent } from '../../src/egress/EgressProxy.js';
import { egressTestOrigin } from '../support/egressOrigin.js';
import { packaged } from '../support/hostHarness.js';

const { pool, resolver } = egressTestOrigin((name) => name === 'api.test' || name === 'other.test');

/** A host running the egress plugin installed in a fresh profile, auditing into a JSONL file: its egress events and the file's connection records. */
async function auditedEgressHost() {
  const profile = await pool.profile();
  const file = join(profile, 'audit.jsonl');
  const sink = (await JsonlAuditSink.open(file))._unsafeUnwrap();
  const installer = await pool.open(profile);
  (await installer.install(await packaged('egress'), { canary: false }))._unsafeUnwrap();
  await installer.close();
  const host = await pool.open(profile, { sandbox: { egressResolver: resolver }, audit: { sink } });
  const events: EgressEvent[] = [];
  host.events.on('egress', (event) => events.push(event));
  const connections = async (): Promise<AuditRecord[]> =>
    (await readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditRecord)
      .filter((record) => record.kind === 'connection');
  return { sink, host, events, connections };
}

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('egress connections in the audit trail', { timeout: 120_000 }, () => {
  it('writes a connection record per allowed and refused connection, matching the host events', async () => {
    const { sink, host, events, connections } = await auditedEgressHost();

    expect((await host.call('plug.host-egress.get', { url: 'http://api.test/audited' })).isOk()).toBe(true);
    expect((await host.call('plug.host-egress.get', { url: 'http://other.test/refused' })).isOk()).toBe(true);
    (await sink.close())._unsafeUnwrap();

    expect(await connections()).toEqual([
      { kind: 'connection', at: expect.any(String), plugin_id: 'host-egress', allowed: true, method: 'GET', host: 'api.test', port: 80, address: '203.0.113.30' },
      { kind: 'connection', at: expect.any(String), plugin_id: 'host-egress', allowed: false, method: 'GET', host: 'other.test', port: 80, reason: 'not_listed' },
    ]);
    expect((await connections()).map(({ kind: _kind, at: _at, ...event }) => event)).toEqual(events);
    expect((await connections()).every((record) => 'at' in record && !Number.isNaN(Date.parse(record.at)))).toBe(true);
  });

  it('delivers the summary of refused connections still waiting for the budget when the host closes', async () => {
    const { sink, host, events, connections } = await auditedEgressHost();
    // Past the burst at once: the rest is counted, its summary waiting for the budget to refill.
    const N = 3 * proxySettings.refusedEventsBurst;
    const calls = await Promise.all(Array.from({ length: N }, (_, i) => host.call('plug.host-egress.get', { url: `http://other.test/flood-${i}` })));
    expect(calls.every((call) => call.isOk())).toBe(true);
    await host.close();

    // Every refused connection is in the events by the time close resolved, one by one or in a summary.
    const refused = events.filter((e) => !e.allowed);
    expect(refused.every((e) => e.reason === 'not_listed')).toBe(true);
    expect(refused.some((e) => e.suppressed !== undefined)).toBe(true);
    expect(refused.filter((e) => e.suppressed === undefined).length + refused.reduce((n, e) => n + (e.suppressed ?? 0), 0)).toBe(N);
    (await sink.close())._unsafeUnwrap();
    expect((await connections()).map(({ kind: _kind, at: _at, ...event }) => event)).toEqual(events);
  });
});
