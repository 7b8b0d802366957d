/**
 * A plugin that prints its credential on stderr while it fails (as written,
 * JSON-escaped, base64, base64url, inside a Basic header, hex) and crashes:
 * the host knows the value (it put it in the plugin's environment from the
 * secret store), so neither the crash error's stderr tail nor the `stderr`
 * lines an application logs carry it. A real plugin process under the
 * sandbox, a real secret store.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const LOOKUP = 'plug.host-canary.lookup';

describe('secret values the host knows, in a plugin stderr', () => {
  it('are redacted in every encoding from the crash error and from the stderr lines', async () => {
    const token = `good-${randomBytes(12).toString('hex')}`;
    const bytes = Buffer.from(token);
    const printed = [
      token,
      JSON.stringify({ token }),
      bytes.toString('base64'),
      bytes.toString('base64url'),
      `Basic ${Buffer.from(`user:${token}`).toString('base64')}`,
      bytes.toString('hex'),
    ];
    const dir = await pool.profile();
    const host = await pool.open(dir, { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const lines: string[] = [];
    const crashes: string[] = [];
    host.events.on('stderr', (e) => lines.push(e.line));
    host.events.on('crash', (e) => crashes.push(e.stderr_tail));
    const failed = (await host.call(LOOKUP, { from: '2026-01-01', to: '2026-01-02', city: 'leak-and-crash' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_CRASHED');
    const tail = String(failed.details['stderr_tail']);
    expect(tail).toMatch(/^raw=\[redacted\]$/m);
    const seen = [JSON.stringify(failed), failed.message, ...lines, ...crashes].join('\n');
    expect(lines.length).toBeGreaterThanOrEqual(6);
    for (const form of printed) expect(seen).not.toContain(form);
    expect(seen).not.toContain(token.slice(5));
  });

  it('are redacted from a wrapped one-line tail that begins inside one', async () => {
    const token = `good-${randomBytes(12).toString('hex')}`;
    const dir = await pool.profile();
    const host = await pool.open(dir, { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const failed = (await host.call(LOOKUP, { from: '2026-01-01', to: '2026-01-02', city: 'leak-in-long-line' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_CRASHED');
    expect(String(failed.details['stderr_tail'])).toMatch(/^\[redacted\]n+$/);
  });

  it('are redacted from a wrapped one-line tail that begins inside one, whatever the stderr ring size', async () => {
    const token = `good-${randomBytes(12).toString('hex')}`;
    const spawner = (await SandboxSpawner.create({ stderrRingBytes: 4096 }))._unsafeUnwrap();
    const host = await pool.open(await pool.profile(), { activation: 'immediate', spawner });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const failed = (await host.call(LOOKUP, { from: '2026-01-01', to: '2026-01-02', city: 'leak-in-line-for-ring-4096' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_CRASHED');
    expect(String(failed.details['stderr_tail'])).toMatch(/^\[redacted\]n+$/);
  });

  it('are redacted from a stderr line the host cut at its bound inside one', async () => {
    const token = `good-${randomBytes(12).toString('hex')}`;
    const host = await pool.open(await pool.profile(), { activation: 'immediate' });
    (await host.install(await packaged('canary')))._unsafeUnwrap();
    expect((await host.setup('host-canary', { HOST_CANARY_TOKEN: token }))._unsafeUnwrap()).toMatchObject({ status: 'passed' });
    const lines: string[] = [];
    host.events.on('stderr', (e) => lines.push(e.line));
    // 16 KiB (the line bound) less 12 bytes of 'n': the line keeps the token's first 12 characters.
    const answered = await host.call(LOOKUP, { from: '2026-01-01', to: '2026-01-02', city: `leak-at-line-cap-${16 * 1024 - 12}` });
    expect(answered.isOk()).toBe(true);
    await waitUntil(() => lines.some((line) => line.startsWith('nnnn')));
    const cut = lines.find((line) => line.startsWith('nnnn'))!;
    expect(cut).toMatch(/^n+\[redacted\] \[line truncated\]$/);
    expect(lines.join('\n')).not.toContain(token.slice(0, 12));
  });
});
