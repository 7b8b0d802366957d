/**
 * The callers an application names in `host.call` take a plugin's in-flight
 * slots in turn: one caller's backlog does not hold up another's call, for an
 * MCP plugin (16 slots) and an ndjson-rpc plugin (1 slot) alike. Real
 * sandboxed fixtures; order of answers only, no times.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CallerIdentity } from '../../src/audit/auditRecord.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { HostPool, removePackages, type FixtureName } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

/** Long enough that no call of the backlog runs out of time on a loaded machine: the test is about order, not time. */
const CALL_TIMEOUT_MS = 120_000;

/**
 * Caller `a` queues `backlog` calls of `opId`, then caller `b` and a call
 * without a caller make one each: how many of a's calls were answered after each of those.
 */
async function answeredAfter(
  host: PluginHost,
  opId: string,
  args: Record<string, unknown>,
  backlog: number,
  callers: { a: CallerIdentity; b: CallerIdentity } = { a: { id: 'a' }, b: { id: 'b' } },
): Promise<{ b: number; app: number }> {
  const warm = await host.call(opId, args, { caller: callers.a });
  expect(warm.isOk()).toBe(true);
  let started = 0;
  let backlogQueued: () => void = () => undefined;
  const queued = new Promise<void>((resolve) => (backlogQueued = resolve));
  const off = host.events.on('call:start', () => {
    if (++started === backlog) backlogQueued();
  });
  const answered: string[] = [];
  const call = async (label: string, caller?: CallerIdentity): Promise<void> => {
    const result = await host.call(opId, args, caller === undefined ? {} : { caller });
    if (result.isErr()) throw result.error;
    answered.push(label);
  };
  const aCalls = Array.from({ length: backlog }, () => call('a', callers.a));
  await Promise.race([queued, Promise.all(aCalls)]);
  off();
  expect(started).toBe(backlog);
  await Promise.all([call('b', callers.b), call('app'), ...aCalls]);
  expect(answered.length).toBe(backlog + 2);
  const after = (label: string): number => answered.slice(answered.indexOf(label)).filter((l) => l === 'a').length;
  return { b: after('b'), app: after('app') };
}

describe('host.call callers and a plugin in-flight slots', () => {
  it.each<[string, FixtureName, string, Record<string, unknown>, number]>([
    ['an MCP plugin', 'probe', 'plug.host-probe.echo', { message: 'queued', delayMs: 50 }, 160],
    ['an ndjson-rpc plugin', 'ndjson', 'plug.host-ndjson.echo', { message: 'queued' }, 60],
  ])('serves another caller, and the application, while one caller still has most of its backlog queued: %s', async (_, fixture, opId, args, backlog) => {
    const host = await pool.installed(await pool.profile(), [fixture], { callTimeoutMs: CALL_TIMEOUT_MS });
    const after = await answeredAfter(host, opId, args, backlog);
    expect(after.b).toBeGreaterThan(backlog / 2);
    expect(after.app).toBeGreaterThan(backlog / 2);
  }, CALL_TIMEOUT_MS + 60_000);

  it("keeps apart an application caller whose id spells a gateway client's transport and name", async () => {
    const host = await pool.installed(await pool.profile(), ['probe'], { callTimeoutMs: CALL_TIMEOUT_MS });
    const backlog = 160;
    const after = await answeredAfter(host, 'plug.host-probe.echo', { message: 'queued', delayMs: 50 }, backlog, {
      a: { id: 'b', transport: 'http' },
      b: { id: 'http:b' },
    });
    expect(after.b).toBeGreaterThan(backlog / 2);
  }, CALL_TIMEOUT_MS + 60_000);
});
