/**
 * A plugin that logs its credential over MCP (`notifications/message`) and
 * prints it on stdout: the host knows the value (it put it in the plugin's
 * environment from the secret store), so the `log` and `stdout` events, which
 * applications log and the gateway forwards to clients, carry it redacted.
 * A real sandboxed plugin process, a real secret store.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

describe('secret values the host knows, in what a plugin logs or prints', () => {
  it('are redacted from log events (as written and base64) and from stdout lines', async () => {
    const token = 'good-3c9e1f7a5b2d8046';
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const logs: HostEventMap['log'][] = [];
    const stdout: string[] = [];
    host.events.on('log', (e) => logs.push(e));
    host.events.on('stdout', (e) => stdout.push(e.line));
    expect((await host.call('plug.host-canary.lookup', { from: '2026-01-01', to: '2026-01-02', city: 'log-and-print' })).isOk()).toBe(true);
    await waitUntil(() => logs.length > 0 && stdout.length > 0);
    expect(logs[0]).toMatchObject({ plugin_id: 'host-canary', level: 'info', data: { config: { token: '[redacted]' }, note: 'auth [redacted]' } });
    expect(stdout).toContain('debug: token=[redacted]');
    expect(JSON.stringify([logs, stdout])).not.toContain(token);
  });

  it('are redacted from the host logger records that quote a plugin line, and from a stdout excerpt cut inside one', async () => {
    const token = 'good-8e2a4c6f0b1d3957';
    const records: unknown[] = [];
    const record = (level: string) => (fields: Record<string, unknown>, message: string) => records.push({ level, fields, message });
    const logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
    const host = await pool.open(await pool.profile(), { activation: 'immediate', logger });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const stdout: string[] = [];
    host.events.on('stdout', (e) => stdout.push(e.line));
    expect((await host.call('plug.host-canary.lookup', { from: '2026-01-01', to: '2026-01-02', city: 'log-and-print' })).isOk()).toBe(true);
    // The host keeps 200 characters of a dropped stdout line: 190 of 'n', then the token's first 10.
    expect((await host.call('plug.host-canary.lookup', { from: '2026-01-01', to: '2026-01-02', city: 'print-at-excerpt-cap-190' })).isOk()).toBe(true);
    await waitUntil(() => stdout.length >= 2);
    expect(stdout).toContain('debug: token=[redacted]');
    expect(stdout).toContain(`${'n'.repeat(190)}[redacted]…`);
    const logged = JSON.stringify(records);
    expect(logged).toContain('debug: token=[redacted]');
    expect(logged).not.toContain(token.slice(0, 10));
    expect(JSON.stringify(stdout)).not.toContain(token.slice(0, 10));
  });
});
