/**
 * A validation of a large answer on a worker belongs to the call that asked
 * for it (src/manifest/answerValidation.ts): the caller's abort or the
 * session's close ends the wait at once with the call's usual outcome
 * (PLUGIN_CANCELLED, HOST_CLOSED), never the unchecked answer, and the
 * worker running it is terminated. Real plugin processes
 * (fixtures/schema-lister.mjs) and real workers; a schema whose pattern
 * backtracks past the 10 s deadline, so the order of notices and outcomes
 * tells the cancel from the deadline (no timings asserted).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { offThreadValidationState } from '../../../src/manifest/answerValidation.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { McpPluginNotice } from '../../../src/shapes/mcp/McpSurface.js';
import { BACKTRACKING_PATTERN, backtrackingText } from '../../support/expensiveSchemas.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const LISTER = join(import.meta.dirname, 'fixtures', 'schema-lister.mjs');
const dir = mkdtempSync(join(tmpdir(), 'mph-offthread-cancel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

/** A session of a tool whose output schema backtracks for ever on a large answer; its notices go to `steps`. */
async function slowLister(steps: string[]): Promise<McpSession> {
  const file = join(dir, 'slow.json');
  writeFileSync(file, JSON.stringify({ type: 'object', properties: { s: { type: 'string', pattern: BACKTRACKING_PATTERN }, pad: { type: 'array' } } }));
  const notices = (notice: McpPluginNotice): void => {
    if (notice.kind === 'answer_validation') steps.push(`${notice.phase}${notice.phase === 'end' ? `:${notice.outcome}` : ''}`);
  };
  const session = McpSession.create({ launch: launchCommand([process.execPath, LISTER, `--schema-file=${file}`]), onNotice: notices })._unsafeUnwrap();
  sessions.push(session);
  // Started first, so that what follows waits on nothing but the validation.
  expect((await session.callTool('raw', {})).isOk()).toBe(true);
  return session;
}

const slowAnswer = (): unknown => ({ s: backtrackingText(), pad: Array.from({ length: 2000 }, () => 0) });

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('a validation on a worker ends with its call', () => {
  it("the caller's abort during the validation fails the call as PLUGIN_CANCELLED and terminates the worker", async () => {
    const steps: string[] = [];
    const session = await slowLister(steps);
    const before = offThreadValidationState();
    const controller = new AbortController();
    const call = (async () => {
      const result = await session.callTool('shaped', { structured: slowAnswer() }, { signal: controller.signal });
      steps.push('answered');
      return result;
    })();
    await waitFor(() => steps.includes('start'));
    controller.abort(new Error('the user left'));
    const refused = (await call)._unsafeUnwrapErr();
    // Cancelled, not the deadline's verdict: the old pool kept the wait until 'end:timeout'.
    expect(steps).toEqual(['start', 'end:cancelled', 'answered']);
    expect(refused.code).toBe('PLUGIN_CANCELLED');
    expect(refused.details).toMatchObject({ tool: 'shaped' });
    const after = offThreadValidationState();
    expect(after.cancelled).toBe(before.cancelled + 1);
    expect(after.timedOut).toBe(before.timedOut);
    expect(after.busy).toBe(0);
    // The pool goes on: the next large answer gets a worker and a verdict.
    const next = await session.callTool('shaped', { structured: { s: 'aaa', pad: Array.from({ length: 2000 }, () => 0) } });
    expect(next.isOk()).toBe(true);
    expect(steps.slice(3)).toEqual(['start', 'end:valid']);
  }, 60_000);

  it('closing the session during the validation fails the call as HOST_CLOSED and terminates the worker', async () => {
    const steps: string[] = [];
    const session = await slowLister(steps);
    const before = offThreadValidationState();
    const call = (async () => {
      const result = await session.callTool('shaped', { structured: slowAnswer() });
      steps.push('answered');
      return result;
    })();
    await waitFor(() => steps.includes('start'));
    await session.close();
    const refused = (await call)._unsafeUnwrapErr();
    expect(steps).toEqual(['start', 'end:cancelled', 'answered']);
    expect(refused.code).toBe('HOST_CLOSED');
    const after = offThreadValidationState();
    expect(after.cancelled).toBe(before.cancelled + 1);
    expect(after.busy).toBe(0);
  }, 60_000);
});
