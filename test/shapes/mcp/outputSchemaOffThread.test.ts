/**
 * A plugin's answer over offThreadValidationBytes is checked against its
 * tool's output schema on a validation worker, never on the host's thread
 * (src/manifest/answerValidation.ts): against a schema within every bound,
 * one 1 MiB answer held that thread for seconds, and every other plugin's
 * calls with it. Real plugin processes (fixtures/schema-lister.mjs); the
 * ordering is read from the sessions' notices and the other call's outcome,
 * not from timings.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { answerLargerThan, offThreadValidationState } from '../../../src/manifest/answerValidation.js';
import { measureSchema } from '../../../src/manifest/schemaLimits.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { McpPluginNotice } from '../../../src/shapes/mcp/McpSurface.js';
import { BACKTRACKING_PATTERN, backtrackingText, dagUnderItems } from '../../support/expensiveSchemas.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const LISTER = join(import.meta.dirname, 'fixtures', 'schema-lister.mjs');
const dir = mkdtempSync(join(tmpdir(), 'mph-offthread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

/** What happened, in the order it happened: notices of the sessions and the ends of calls. */
type Step = string;

function lister(name: string, args: string[], steps: Step[]): McpSession {
  const notices = (notice: McpPluginNotice): void => {
    if (notice.kind === 'answer_validation') steps.push(`${name}:${notice.phase}${notice.phase === 'end' ? `:${notice.outcome}` : ''}`);
  };
  const session = McpSession.create({ launch: launchCommand([process.execPath, LISTER, ...args]), onNotice: notices })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

function schemaFile(name: string, schema: unknown): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(schema));
  return `--schema-file=${file}`;
}

const elements = (count: number, element: unknown = {}): unknown[] => Array.from({ length: count }, () => element);

describe('large answers are checked against their output schema on a worker', () => {
  it('a DAG under items within every bound: a valid large answer passes, an invalid one fails, each said by a start and an end notice', async () => {
    const schema = dagUnderItems(11);
    expect(measureSchema(schema).ok).toBe(true);
    const steps: Step[] = [];
    const session = lister('dag', [schemaFile('dag', schema)], steps);
    const valid = { a: elements(5000) };
    expect(answerLargerThan(valid, pluginAnswerLimits.offThreadValidationBytes)).toBe(true);
    expect((await session.callTool('shaped', { structured: valid }))._unsafeUnwrap().value.structuredContent).toEqual(valid);
    const invalid = { a: [...elements(4999), 'not an object'] };
    const refused = (await session.callTool('shaped', { structured: invalid }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(refused.message).toContain('data/a/4999 must be object');
    expect(steps).toEqual(['dag:start', 'dag:end:valid', 'dag:start', 'dag:end:invalid']);
    // A small answer is checked on the host's thread as before: no notice, the same verdicts.
    expect((await session.callTool('shaped', { structured: { a: elements(3) } })).isOk()).toBe(true);
    expect((await session.callTool('shaped', { structured: { a: ['x'] } }))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(steps).toHaveLength(4);
  }, 60_000);

  it('a validation past its deadline ends its worker and fails the call as validation_timeout; another plugin is answered meanwhile', async () => {
    const steps: Step[] = [];
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: BACKTRACKING_PATTERN }, pad: { type: 'array' } } };
    const slow = lister('slow', [schemaFile('slow', schema)], steps);
    const other = lister('other', ['--checked'], steps);
    // Both started first, so that what follows waits on nothing but the validation.
    expect((await other.callTool('checked', { structured: { n: 0 } })).isOk()).toBe(true);
    expect((await slow.callTool('raw', {})).isOk()).toBe(true);
    const before = offThreadValidationState();

    const structured = { s: backtrackingText(), pad: elements(2000, 0) };
    const slowCall = (async () => {
      const result = await slow.callTool('shaped', { structured });
      steps.push('slow:answered');
      return result;
    })();
    await waitFor(() => steps.includes('slow:start'));
    // The host's thread is free while the worker backtracks: the other plugin's call is sent, answered and checked.
    const otherCall = await other.callTool('checked', { structured: { n: 1 } });
    steps.push('other:answered');
    expect(otherCall._unsafeUnwrap().value.structuredContent).toEqual({ n: 1 });
    expect(offThreadValidationState().busy).toBeGreaterThanOrEqual(1);

    const refused = (await slowCall)._unsafeUnwrapErr();
    expect(steps).toEqual(['slow:start', 'other:answered', 'slow:end:timeout', 'slow:answered']);
    expect(refused.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(refused.details).toMatchObject({ tool: 'shaped', reason: 'validation_timeout', timeout_ms: pluginAnswerLimits.offThreadValidationTimeoutMs });
    expect(refused.hint).toContain('offThreadValidationTimeoutMs');
    // The worker that ran it was ended, not left backtracking.
    const after = offThreadValidationState();
    expect(after.timedOut).toBe(before.timedOut + 1);
    expect(after.busy).toBe(0);
    expect(after.workers).toBeLessThan(before.workers + 1);
    // The next large answer gets a new worker.
    const next = (await slow.callTool('shaped', { structured: { s: 'aaa', pad: elements(2000, 0) } })).isOk();
    expect(next).toBe(true);
  }, 60_000);
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
