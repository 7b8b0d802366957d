/**
 * Supervision of the MCP surface beyond tools, with a real SDK server
 * (fixtures/plugins/host-surface) in the sandbox and a fake clock for the
 * backoff ladder: subscriptions outlive the plugin's process (a SIGKILL, a
 * crash during a call), a new process that refuses one is reported, and a
 * crash during resources/read, resources/subscribe, prompts/get or
 * completion/complete counts toward quarantine as a crash during tools/call does.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Result } from 'neverthrow';
import type { HostError } from '../../src/errors/HostError.js';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import type { PluginHost, PluginHostOptions } from '../../src/host/PluginHost.js';
import { waitUntil } from '../support/eventually.js';
import { FakeClock, HostPool, removePackages } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';
import { pluginNodeProcess } from '../support/processes.js';

const TIMEOUT_MS = 120_000;
const ID = 'host-surface';
const NOTE = 'surface://note';
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

async function installed(options: PluginHostOptions): Promise<{ host: PluginHost; dir: string }> {
  const dir = await pool.profile();
  return { host: await pool.installed(dir, ['surface'], options), dir };
}

/** Sets the fixture's whole-process mode (read by each new process from its data directory). */
async function setMode(dir: string, mode: string): Promise<void> {
  const dataDir = join(dir, 'data', ID);
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'mode'), mode);
}

interface Seen {
  readonly stderr: string[];
  readonly updates: HostEventMap['resource:updated'][];
  readonly crashes: HostEventMap['crash'][];
  readonly lost: HostEventMap['resource:subscription_lost'][];
  readonly quarantine: HostEventMap['quarantine'][];
  spawns: number;
}

function watch(host: PluginHost): Seen {
  const seen: Seen = { stderr: [], updates: [], crashes: [], lost: [], quarantine: [], spawns: 0 };
  host.events.on('quarantine', (e) => seen.quarantine.push(e));
  host.events.on('stderr', (e) => seen.stderr.push(e.line));
  host.events.on('resource:updated', (e) => seen.updates.push(e));
  host.events.on('crash', (e) => seen.crashes.push(e));
  host.events.on('resource:subscription_lost', (e) => seen.lost.push(e));
  host.events.on('spawn', () => seen.spawns++);
  return seen;
}

const count = (lines: readonly string[], text: string): number => lines.filter((l) => l === text).length;

describe('subscriptions across plugin restarts', () => {
  it(
    'subscribes again on the process started after a SIGKILL, as soon as the backoff allows, and updates arrive again',
    async () => {
      const clock = new FakeClock();
      const { host, dir } = await installed({ clock, idleTimeoutMs: 0 });
      const seen = watch(host);
      expect((await host.subscribeResource(ID, NOTE)).isOk()).toBe(true);
      expect((await host.call(`plug.${ID}.touch`, {})).isOk()).toBe(true);
      await waitUntil(() => seen.updates.length === 1);

      process.kill(pluginNodeProcess(dir), 'SIGKILL');
      // A process that dies holding subscriptions is the plugin's failure, on the same ladder as a crashed call.
      await waitUntil(() => seen.quarantine.length === 1);
      expect(seen.crashes).toHaveLength(1);
      expect(seen.quarantine[0]).toMatchObject({ plugin_id: ID, quarantined: true, retry_count: 1, next_retry_at: clock.now() + 30_000 });
      expect(seen.spawns).toBe(1);

      // No request is needed: the host starts it again when the first step of the ladder has passed.
      clock.advance(30_000);
      await waitUntil(() => count(seen.stderr, `subscribed ${NOTE}`) === 2);
      expect(seen.spawns).toBe(2);
      expect((await host.call(`plug.${ID}.touch`, {})).isOk()).toBe(true);
      await waitUntil(() => seen.updates.length === 2);
      expect(seen.updates[1]).toEqual({ plugin_id: ID, uri: NOTE });
      expect(await readStateRow(dir, ID)).toMatchObject({ retry_count: 0, quarantined_at: null });
    },
    TIMEOUT_MS,
  );

  it(
    'carries subscriptions into the session started after a crash during a call',
    async () => {
      const clock = new FakeClock();
      const { host } = await installed({ clock, idleTimeoutMs: 0 });
      const seen = watch(host);
      expect((await host.subscribeResource(ID, NOTE)).isOk()).toBe(true);
      expect((await host.call(`plug.${ID}.crash`, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_CRASHED');

      clock.advance(30_000);
      await waitUntil(() => count(seen.stderr, `subscribed ${NOTE}`) === 2);
      expect((await host.call(`plug.${ID}.touch`, {})).isOk()).toBe(true);
      await waitUntil(() => seen.updates.length === 1);

      // Unsubscribed, the plugin is neither told again nor restarted for it.
      expect((await host.unsubscribeResource(ID, NOTE)).isOk()).toBe(true);
      await waitUntil(() => count(seen.stderr, `unsubscribed ${NOTE}`) === 1);
      expect((await host.call(`plug.${ID}.crash`, {})).isErr()).toBe(true);
      clock.advance(60_000);
      expect((await host.call(`plug.${ID}.touch`, {})).isOk()).toBe(true);
      expect(count(seen.stderr, `subscribed ${NOTE}`)).toBe(2);
    },
    TIMEOUT_MS,
  );

  it(
    'reports a subscription the new process refuses, and the start still succeeds',
    async () => {
      const clock = new FakeClock();
      const { host, dir } = await installed({ clock, idleTimeoutMs: 0 });
      const seen = watch(host);
      expect((await host.subscribeResource(ID, NOTE)).isOk()).toBe(true);
      await setMode(dir, 'no-subscribe');
      expect((await host.call(`plug.${ID}.crash`, {})).isErr()).toBe(true);
      clock.advance(30_000);
      await waitUntil(() => seen.lost.length === 1);
      expect(seen.lost[0]).toMatchObject({ plugin_id: ID, uri: NOTE, code: 'PLUGIN_METHOD_NOT_FOUND' });
      expect((await host.call(`plug.${ID}.touch`, {})).isOk()).toBe(true);
      expect(await readStateRow(dir, ID)).toMatchObject({ retry_count: 0 });

      // A plugin that refuses outright: the same report, with the plugin's own code.
      await rm(join(dir, 'data', ID, 'mode'));
      expect((await host.call(`plug.${ID}.crash`, {})).isErr()).toBe(true);
      clock.advance(30_000);
      expect((await host.subscribeResource(ID, NOTE)).isOk()).toBe(true);
      await setMode(dir, 'refuse-subscribe');
      expect((await host.call(`plug.${ID}.crash`, {})).isErr()).toBe(true);
      clock.advance(30_000);
      await waitUntil(() => seen.lost.length === 2);
      expect(seen.lost[1]).toMatchObject({ plugin_id: ID, uri: NOTE, code: 'PLUGIN_INVALID_PARAMS' });
    },
    TIMEOUT_MS,
  );
});

describe('the log level across an idle stop', () => {
  it(
    'is set again on the process a call starts after the plugin was stopped for being idle',
    async () => {
      const clock = new FakeClock();
      const { host } = await installed({ clock, idleTimeoutMs: 60_000 });
      const logs: HostEventMap['log'][] = [];
      const exits: HostEventMap['exit'][] = [];
      host.events.on('log', (e) => logs.push(e));
      host.events.on('exit', (e) => exits.push(e));
      expect((await host.setLogLevel(ID, 'error')).isOk()).toBe(true);
      clock.advance(60_000);
      await waitUntil(() => exits.length === 1);
      // The flood's messages are at info, below the level the host set before the idle stop.
      expect((await host.call(`plug.${ID}.flood`, { count: 3, bytes: 1 })).isOk()).toBe(true);
      expect((await host.setLogLevel(ID, 'info')).isOk()).toBe(true);
      expect((await host.call(`plug.${ID}.flood`, { count: 1, bytes: 1 })).isOk()).toBe(true);
      await waitUntil(() => logs.length === 1);
      expect(logs[0]).toMatchObject({ plugin_id: ID, level: 'info', data: '0 x' });
    },
    TIMEOUT_MS,
  );
});

describe('crashes during surface requests', () => {
  it(
    'count toward quarantine exactly as a crash during tools/call: one step of the ladder each, then refused until the wait is over',
    async () => {
      const clock = new FakeClock();
      const { host, dir } = await installed({ clock, idleTimeoutMs: 0 });
      const seen = watch(host);
      const requests: [string, () => Promise<Result<unknown, HostError>>][] = [
        ['tools/call', async () => await host.call(`plug.${ID}.crash`, {})],
        ['resources/read', async () => await host.readResource(ID, 'surface://crash')],
        ['resources/subscribe', async () => await host.subscribeResource(ID, 'surface://crash')],
        ['prompts/get', async () => await host.getPrompt(ID, 'crash', { name: 'x' })],
        ['completion/complete', async () => await host.complete(ID, { type: 'ref/prompt', name: 'crash' }, { argument: { name: 'name', value: '' } })],
      ];
      const waits = [30_000, 60_000, 120_000, 240_000, 480_000];
      for (const [step, [what, request]] of requests.entries()) {
        const failed = await request();
        expect(failed.isErr(), what).toBe(true);
        await waitUntil(() => seen.crashes.length === step + 1);
        const row = await readStateRow(dir, ID);
        expect(row, what).toMatchObject({ status: 'quarantined', retry_count: step + 1, next_retry_at: new Date(clock.now() + waits[step]!).toISOString() });
        expect((await host.readResource(ID, NOTE))._unsafeUnwrapErr(), what).toMatchObject({ code: 'VARIANT_QUARANTINED', retry_after_ms: waits[step] });
        clock.advance(waits[step]!);
      }
      expect(seen.crashes.map((c) => c.code)).toEqual(Array(5).fill('PLUGIN_CRASHED'));
      // The ladder is over: the next failure quarantines for good, and a surface request is refused like a call.
      expect((await host.readResource(ID, 'surface://crash')).isErr()).toBe(true);
      await waitUntil(async () => (await readStateRow(dir, ID)).permanent_quarantine === true);
      expect((await host.prompts(ID))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retryable: false });
    },
    TIMEOUT_MS,
  );

  it(
    'a surface request that starts the plugin cleanly clears its failure history',
    async () => {
      const clock = new FakeClock();
      const { host, dir } = await installed({ clock, idleTimeoutMs: 0 });
      expect((await host.readResource(ID, 'surface://crash')).isErr()).toBe(true);
      await waitUntil(async () => (await readStateRow(dir, ID)).retry_count === 1);
      clock.advance(30_000);
      expect((await host.readResource(ID, NOTE))._unsafeUnwrap().contents[0]).toMatchObject({ uri: NOTE });
      expect(await readStateRow(dir, ID)).toMatchObject({ status: 'active', retry_count: 0, quarantined_at: null });
    },
    TIMEOUT_MS,
  );
});

describe("a start longer than its callers' deadlines", () => {
  it(
    'is one process that callers join, and when it never finishes it counts as a failed start and the plugin is quarantined',
    async () => {
      const { host, dir } = await installed({ startupTimeoutMs: 2_000 });
      await setMode(dir, 'silent');
      const seen = watch(host);
      const exits: HostEventMap['exit'][] = [];
      host.events.on('exit', (e) => exits.push(e));
      for (let call = 0; call < 3; call++) {
        const failed = (await host.call(`plug.${ID}.touch`, {}, { timeoutMs: 200 }))._unsafeUnwrapErr();
        expect(failed).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { waiting_for: 'the plugin to start' } });
      }
      // The callers left; the start goes on to the plugin's own start timeout, and then it is the plugin's failure.
      expect(seen.spawns).toBe(1);
      await waitUntil(() => seen.quarantine.length === 1);
      expect(seen.crashes.map((c) => c.code)).toEqual(['PLUGIN_HANDSHAKE_FAILED']);
      expect(await readStateRow(dir, ID)).toMatchObject({ status: 'quarantined', retry_count: 1, last_error_code: 'PLUGIN_HANDSHAKE_FAILED' });
      await waitUntil(() => exits.length === 1);
      expect((await host.call(`plug.${ID}.touch`, {}, { timeoutMs: 200 }))._unsafeUnwrapErr().code).toBe('VARIANT_QUARANTINED');
      expect(seen.spawns).toBe(1);
    },
    TIMEOUT_MS,
  );

  it(
    'a slow start that does finish serves the caller that comes after it, and counts nothing',
    async () => {
      const { host, dir } = await installed({ startupTimeoutMs: 20_000 });
      await setMode(dir, 'slow-start');
      const seen = watch(host);
      const cut = (await host.call(`plug.${ID}.touch`, {}, { timeoutMs: 100 }))._unsafeUnwrapErr();
      expect(cut).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { waiting_for: 'the plugin to start' } });
      expect((await host.call(`plug.${ID}.touch`, {}, { timeoutMs: 15_000 })).isOk()).toBe(true);
      expect(seen.spawns).toBe(1);
      expect(seen.crashes).toEqual([]);
      expect(await readStateRow(dir, ID)).toMatchObject({ retry_count: 0, quarantined_at: null });
    },
    TIMEOUT_MS,
  );
});
