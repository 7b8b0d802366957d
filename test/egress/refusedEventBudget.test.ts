/**
 * Refused egress connections cannot flood the audit file or the host's
 * `egress` events (review R11 F9): a plugin's refused connections are
 * reported one by one up to a budget per refusal reason, then counted into
 * one summary (`suppressed`) when the budget refills. A real proxy on
 * loopback sockets writes to a real JSONL audit file through the host's
 * auditor; only time is a fake, advanced by hand, so the counts are exact.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import type { AuditRecord } from '../../src/audit/auditRecord.js';
import { CallAuditor } from '../../src/audit/callAudit.js';
import { JsonlAuditSink } from '../../src/audit/JsonlAuditSink.js';
import { EgressProxy, type EgressEvent, type EgressProxyLimits } from '../../src/egress/EgressProxy.js';
import { egressPolicy } from '../../src/egress/destinations.js';
import { FakeClock } from '../support/clocks.js';

const BURST = proxySettings.refusedEventsBurst;
const INTERVAL_MS = 1000 / proxySettings.refusedEventsPerSecond;


const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setUp(
  limits: Partial<EgressProxyLimits> = {},
): Promise<{ port: number; events: EgressEvent[]; clock: FakeClock; records: () => Promise<AuditRecord[]>; proxy: EgressProxy }> {
  const dir = await mkdtemp(join(tmpdir(), 'refused-budget-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'audit.jsonl');
  const sink = (await JsonlAuditSink.open(file))._unsafeUnwrap();
  cleanup.push(() => sink.close());
  const clock = new FakeClock();
  const auditor = new CallAuditor({ sink }, clock);
  const events: EgressEvent[] = [];
  const proxy = new EgressProxy({
    onEvent: (event) => {
      events.push(event);
      auditor.connection(event);
    },
    clock,
    limits,
  });
  const server: Server = createServer(proxy.attach('flooder', egressPolicy(['api.example.com'], '/egress')._unsafeUnwrap()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  const records = async (): Promise<AuditRecord[]> => {
    (await sink.flush())._unsafeUnwrap();
    return (await readFile(file, 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRecord);
  };
  return { port: (server.address() as AddressInfo).port, events, clock, records, proxy };
}

/** One connection that sends `payload`; the proxy's answer once it has closed it (after deciding, and reporting, it). */
function refusedOnce(port: number, payload: string): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    if (payload !== '') socket.write(payload);
  });
}

/** `count` refused connections, `parallel` at a time. */
async function flood(port: number, payload: string, count: number, parallel = 8): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (left > 0) {
        left--;
        await refusedOnce(port, payload);
      }
    }),
  );
}

const unlisted = (i = 0): string => `CONNECT not-listed-${i}.example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n`;

describe('refused egress events per plugin and reason', { timeout: 60_000 }, () => {
  it('reports a burst of refused connections up to the budget, then one summary whose count makes up the rest', async () => {
    const { port, events, clock, records } = await setUp();
    const N = 4 * BURST;
    await flood(port, unlisted(), N);

    // The clock has not moved: exactly the burst is reported, every one a connection with its destination.
    expect(events).toHaveLength(BURST);
    expect(events.every((e) => !e.allowed && e.reason === 'not_listed' && e.host === 'not-listed-0.example.org' && e.suppressed === undefined)).toBe(true);

    // Once a token is free again the rest is reported in one summary, not lost.
    clock.advance(INTERVAL_MS);
    expect(events).toHaveLength(BURST + 1);
    expect(events[BURST]).toEqual({ plugin_id: 'flooder', allowed: false, method: '', host: '', port: 0, reason: 'not_listed', suppressed: N - BURST });

    const connections = (await records()).filter((r) => r.kind === 'connection');
    expect(connections).toHaveLength(BURST + 1);
    expect(connections.map(({ kind: _kind, at: _at, ...event }) => event)).toEqual(events);
    const reported = connections.filter((r) => r.suppressed === undefined).length;
    const summed = connections.reduce((n, r) => n + (r.suppressed ?? 0), 0);
    expect(reported + summed).toBe(N);

    // Nothing more to say: no further summary when time goes on.
    clock.advance(10 * INTERVAL_MS);
    expect(events).toHaveLength(BURST + 1);
  });

  it('under a steady flood, reports no more than the budget refills, and every refused connection is counted', async () => {
    const { port, events, clock } = await setUp();
    let sent = 0;
    for (let round = 0; round < 5; round++) {
      await flood(port, unlisted(round), 30);
      sent += 30;
      clock.advance(INTERVAL_MS);
    }
    // Burst + one token per step of the clock, whatever mix of single events and summaries they became.
    expect(events.length).toBeLessThanOrEqual(BURST + 5);
    const suppressed = events.reduce((n, e) => n + (e.suppressed ?? 0), 0);
    // The last round's summary may still wait for a token: let it come.
    clock.advance(10 * INTERVAL_MS);
    const total = events.filter((e) => e.suppressed === undefined).length + events.reduce((n, e) => n + (e.suppressed ?? 0), 0);
    expect(total).toBe(sent);
    expect(suppressed).toBeGreaterThan(0);
  });

  it('reports the pending summary when the proxy closes before its budget refills, with the count of every connection not reported', async () => {
    const { port, events, clock, records, proxy } = await setUp();
    const N = 3 * BURST;
    await flood(port, unlisted(), N);
    expect(events).toHaveLength(BURST);

    // The host closes before the next token: the count must not wait for a timer nobody will see fire.
    proxy.close();
    expect(events).toHaveLength(BURST + 1);
    expect(events[BURST]).toEqual({ plugin_id: 'flooder', allowed: false, method: '', host: '', port: 0, reason: 'not_listed', suppressed: N - BURST });
    const connections = (await records()).filter((r) => r.kind === 'connection');
    expect(connections.filter((r) => r.suppressed === undefined).length + connections.reduce((n, r) => n + (r.suppressed ?? 0), 0)).toBe(N);

    // Its timer is gone: no second summary, nothing counted twice; a second close has nothing to say.
    clock.advance(10 * INTERVAL_MS);
    proxy.close();
    expect(events).toHaveLength(BURST + 1);
  });

  it("counts each reason on its own budget: connections past the plugin's cap do not use up the budget of unlisted destinations", async () => {
    const { port, events, clock } = await setUp({ maxConnectionsPerPlugin: 2 });
    const held: Socket[] = [];
    for (let i = 0; i < 2; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      held.push(socket);
    }
    cleanup.push(() => held.forEach((s) => s.destroy()));
    // Past the cap the proxy closes a connection at once, before any request: the cheapest refusal there is.
    await flood(port, '', 2 * BURST);
    const atCap = events.filter((e) => e.reason === 'connection_limit');
    expect(atCap).toHaveLength(BURST);
    expect(atCap.every((e) => e.suppressed === undefined)).toBe(true);

    held.forEach((s) => s.destroy());
    // The proxy may not have seen the held ones close yet: a connection it closes unanswered was one more past the cap.
    let pastCap = 2 * BURST;
    for (let answered = 0; answered < 3; ) {
      if ((await refusedOnce(port, unlisted())).startsWith('HTTP/1.1 403')) answered++;
      else pastCap++;
    }
    expect(events.filter((e) => e.reason === 'not_listed')).toHaveLength(3);

    clock.advance(INTERVAL_MS);
    expect(events.filter((e) => e.suppressed !== undefined)).toEqual([{ plugin_id: 'flooder', allowed: false, method: '', host: '', port: 0, reason: 'connection_limit', suppressed: pastCap - BURST }]);
  });
});
