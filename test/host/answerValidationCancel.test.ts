/**
 * A large result's validation on a worker belongs to its call
 * (src/manifest/answerValidation.ts): the caller's abort ends it with
 * PLUGIN_CANCELLED and host.close() with HOST_CLOSED, at once, never with the
 * unchecked result, and the worker running it is terminated, so a process
 * that closes its host exits without waiting for the validation's deadline.
 * Through PluginHost with a real ndjson-rpc plugin subprocess (the
 * host-ndjson echo) whose response schema backtracks for ever on the large
 * result; the order of events and outcomes tells the cancel from the
 * deadline (no timings asserted).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { offThreadValidationState } from '../../src/manifest/answerValidation.js';
import { BACKTRACKING_PATTERN, backtrackingText } from '../support/expensiveSchemas.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');
const OP = 'plug.host-ndjson.echo';
const CLOSING_HOST = join(import.meta.dirname, 'closingValidationHost.ts');
const IDLE_POOL = join(import.meta.dirname, 'idleValidationPool.ts');

/** The echo plugin whose response schema checks `note` with a pattern RE2 cannot run. */
async function echoWithSlowSchema(): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  await addSchemaRef(dir, 'echo', 'host-ndjson.echo', {
    request: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    response: { type: 'object', properties: { note: { type: 'string', pattern: BACKTRACKING_PATTERN }, pad: { type: 'array', items: { type: 'number' } } } },
  });
  return dir;
}

/** A result the schema above takes longer than the validation deadline to check, and large enough to go to a worker. */
const slowArgs = (): unknown => ({ text: 'a', note: backtrackingText(), pad: Array.from({ length: 3000 }, (_, i) => i) });

async function whenBusy(): Promise<void> {
  while (offThreadValidationState().busy === 0) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('a large result whose validation runs on a worker', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  async function installedProfile(): Promise<string> {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(await echoWithSlowSchema(), { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    return profile;
  }

  it("ends with PLUGIN_CANCELLED when its caller aborts during the validation, and with HOST_CLOSED when the host closes", async () => {
    const host = await pool.open(await installedProfile());
    const steps: string[] = [];
    const controller = new AbortController();
    host.events.on('answer:validation', (event) => {
      steps.push(`validation:${event.phase}${event.outcome === undefined ? '' : `:${event.outcome}`}`);
      // Aborted once a worker runs it (the start event comes just before it is handed over).
      if (event.phase === 'start' && !controller.signal.aborted) void whenBusy().then(() => controller.abort(new Error('the user left')));
    });
    const before = offThreadValidationState();
    const aborted = (await host.call(OP, slowArgs(), { signal: controller.signal }))._unsafeUnwrapErr();
    steps.push('aborted:answered');
    expect(aborted.code).toBe('PLUGIN_CANCELLED');
    expect(aborted.details).toMatchObject({ tool: 'echo', plugin_id: 'host-ndjson', op_id: OP });

    let closing: Promise<void> | undefined;
    const closeOnStart = (): void => {
      closing ??= whenBusy().then(() => host.close());
    };
    host.events.on('answer:validation', (event) => {
      if (event.phase === 'start') closeOnStart();
    });
    const closed = (await host.call(OP, slowArgs()))._unsafeUnwrapErr();
    steps.push('closed:answered');
    await closing;
    expect(closed.code).toBe('HOST_CLOSED');
    // Each wait ended as cancelled before its call's outcome: the deadline's 'timeout' never came.
    expect(steps).toEqual(['validation:start', 'validation:end:cancelled', 'aborted:answered', 'validation:start', 'validation:end:cancelled', 'closed:answered']);
    // Both workers were terminated, not left backtracking until the deadline.
    const after = offThreadValidationState();
    expect(after.cancelled).toBe(before.cancelled + 2);
    expect(after.timedOut).toBe(before.timedOut);
    expect(after.busy).toBe(0);
  }, 90_000);

  it('a process that closes its host during the validation exits by itself with its code, its worker terminated', async () => {
    const profile = await installedProfile();
    const child = spawn(process.execPath, ['--import', 'tsx', CLOSING_HOST, profile, OP, JSON.stringify(slowArgs())], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (exit) => resolve(exit)));
    expect(code, stderr).toBe(7);
    const report = JSON.parse(stdout.trim()) as { code: string; steps: string[]; state: { cancelled: number; timedOut: number; workers: number; busy: number } };
    // Ended by the close, not by the deadline (which would say 'end:timeout' and PLUGIN_RESPONSE_SCHEMA_VIOLATION).
    expect(report.code).toBe('HOST_CLOSED');
    expect(report.steps).toEqual(['start', 'end:cancelled']);
    expect(report.state).toMatchObject({ cancelled: 1, timedOut: 0, workers: 0, busy: 0 });
  }, 90_000);

  it('an idle pool does not keep a process alive: it exits with its code while its idle worker is still there', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', IDLE_POOL], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (exit) => resolve(exit)));
    expect(code, stderr).toBe(7);
    // One worker alive and idle at the exit: the exit did not wait for its retirement.
    expect(JSON.parse(stdout.trim())).toMatchObject({ verdict: 'valid', state: { workers: 1, busy: 0 } });
  }, 60_000);
});
