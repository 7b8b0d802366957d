/**
 * A manifest's response schema (schema_ref) checks a large result on a
 * validation worker, not on the host's thread (src/manifest/answerValidation.ts),
 * with `answer:validation` events; a validation past its deadline fails the
 * call as PLUGIN_RESPONSE_SCHEMA_VIOLATION with reason validation_timeout,
 * never passes it unchecked, and the host answers other calls meanwhile.
 * Through PluginHost with a real ndjson-rpc plugin subprocess (the
 * host-ndjson echo, which returns its params). An MCP tool's output schema
 * the same way, its events saying `schema: 'output'`.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { BACKTRACKING_PATTERN, backtrackingText } from '../support/expensiveSchemas.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');
const OP = 'plug.host-ndjson.echo';

/** The echo plugin whose response schema checks `note` with a pattern RE2 cannot run and `pad` as an array of numbers. */
async function echoWithResponseSchema(): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  await addSchemaRef(dir, 'echo', 'host-ndjson.echo', {
    request: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    response: { type: 'object', properties: { note: { type: 'string', pattern: BACKTRACKING_PATTERN }, pad: { type: 'array', items: { type: 'number' } } } },
  });
  return dir;
}

const pad = (count: number): number[] => Array.from({ length: count }, (_, i) => i);

describe('large results against a response schema', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  it('are checked on a worker: valid passes, invalid fails, past the deadline fails as validation_timeout while other calls are answered', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(await echoWithResponseSchema(), { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    const host = await pool.open(profile);
    const steps: string[] = [];
    const events: HostEventMap['answer:validation'][] = [];
    host.events.on('answer:validation', (event) => {
      events.push(event);
      steps.push(`validation:${event.phase}${event.outcome === undefined ? '' : `:${event.outcome}`}`);
    });

    // Small: on the host's thread, no event.
    expect((await host.call(OP, { text: 'a', pad: [1] }))._unsafeUnwrap().value).toEqual({ text: 'a', pad: [1] });
    expect(events).toEqual([]);
    const large = { text: 'a', note: 'aaa', pad: pad(3000) };
    expect((await host.call(OP, large))._unsafeUnwrap().value).toEqual(large);
    const wrong = (await host.call(OP, { text: 'a', pad: [...pad(2999), 'x'] }))._unsafeUnwrapErr();
    expect(wrong.code).toBe('PLUGIN_RESPONSE_SCHEMA_VIOLATION');
    expect(wrong.details).toMatchObject({ tool: 'echo', pointer: '/pad/2999', schema_error: 'must be number' });
    expect(events.map((event) => [event.plugin_id, event.tool, event.schema, event.phase, event.outcome])).toEqual([
      ['host-ndjson', 'echo', 'response', 'start', undefined],
      ['host-ndjson', 'echo', 'response', 'end', 'valid'],
      ['host-ndjson', 'echo', 'response', 'start', undefined],
      ['host-ndjson', 'echo', 'response', 'end', 'invalid'],
    ]);

    steps.length = 0;
    const slow = (async () => {
      const result = await host.call(OP, { text: 'a', note: backtrackingText(), pad: pad(3000) });
      steps.push('slow:answered');
      return result;
    })();
    while (!steps.includes('validation:start')) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await host.call(OP, { text: 'b' }))._unsafeUnwrap().value).toEqual({ text: 'b' });
    steps.push('other:answered');
    const refused = (await slow)._unsafeUnwrapErr();
    expect(steps).toEqual(['validation:start', 'other:answered', 'validation:end:timeout', 'slow:answered']);
    expect(refused.code).toBe('PLUGIN_RESPONSE_SCHEMA_VIOLATION');
    expect(refused.details).toMatchObject({ tool: 'echo', reason: 'validation_timeout', timeout_ms: pluginAnswerLimits.offThreadValidationTimeoutMs });
    expect(refused.hint).toContain('offThreadValidationTimeoutMs');
  }, 90_000);

  it("an MCP tool's large structuredContent is checked against its output schema on a worker, with output events", async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-unchecked-schema'));
    const installed = await installer.install(pkg, { canary: false });
    await rm(pkg, { recursive: true, force: true });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    const host = await pool.open(profile);
    const events: HostEventMap['answer:validation'][] = [];
    host.events.on('answer:validation', (event) => events.push(event));
    const op = 'plug.host-unchecked-schema.small';
    const answer = (await host.call(op, { structured: { n: 1, pad: pad(3000) } }))._unsafeUnwrap();
    if (answer.shape !== 'mcp-plugin') throw new Error(`answered by a ${answer.shape} plugin`);
    expect(answer.value.structuredContent).toEqual({ n: 1, pad: pad(3000) });
    const wrong = (await host.call(op, { structured: { n: 'one', pad: pad(3000) } }))._unsafeUnwrapErr();
    expect(wrong.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(wrong.message).toContain('data/n must be number');
    expect(events.map((event) => [event.plugin_id, event.tool, event.schema, event.phase, event.outcome])).toEqual([
      ['host-unchecked-schema', 'small', 'output', 'start', undefined],
      ['host-unchecked-schema', 'small', 'output', 'end', 'valid'],
      ['host-unchecked-schema', 'small', 'output', 'start', undefined],
      ['host-unchecked-schema', 'small', 'output', 'end', 'invalid'],
    ]);
    expect(events[1]!.duration_ms).toEqual(expect.any(Number));
  }, 90_000);
});
