/**
 * Bounds on the output schemas a running MCP plugin lists beyond their
 * bytes (outputSchemaBudget.test.ts): how many patterns and objects one
 * names, that a tool whose schema is past a bound stays listed and callable
 * with its structuredContent unchecked (and said so once), what a
 * schema Ajv refuses costs when the plugin lists it again, how the
 * per-process budget counts when the process-wide cache of compiled schemas
 * holds more than its bound of all plugins' schemas, and that the cache is
 * bounded in bytes. Real plugin processes (fixtures/schema-lister.mjs)
 * through McpSession.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { HostError } from '../../../src/errors/HostError.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { McpPluginNotice } from '../../../src/shapes/mcp/McpSurface.js';
import { outputSchemaValidators } from '../../../src/shapes/mcp/outputSchemaValidators.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const LISTER = join(import.meta.dirname, 'fixtures', 'schema-lister.mjs');

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function lister(args: readonly string[], onMismatch?: (mismatch: HostError | undefined) => void, onNotice?: (notice: McpPluginNotice) => void): McpSession {
  const session = McpSession.create({
    launch: launchCommand([process.execPath, LISTER, ...args]),
    ...(onMismatch === undefined ? {} : { onToolsChanged: (change) => onMismatch(change.mismatch) }),
    ...(onNotice === undefined ? {} : { onNotice }),
  })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

describe('output schemas a running plugin lists', () => {
  it('a schema naming more than maxSchemaPatterns patterns is not compiled: its tool stays listed, its structuredContent unchecked', async () => {
    const notices: McpPluginNotice[] = [];
    const before = outputSchemaValidators.compileAttempts;
    // A few KB, far within the byte bound: each pattern is a regular-expression compile of its own on the host's thread.
    const over = lister([`--patterns=${pluginAnswerLimits.maxSchemaPatterns + 1}`], undefined, (notice) => notices.push(notice));
    expect((await over.listTools())._unsafeUnwrap().map((tool) => tool.name)).toEqual(['raw', 'shaped']);
    expect(outputSchemaValidators.compileAttempts).toBe(before);
    expect(notices).toEqual([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'patterns', schemaBytes: expect.any(Number) }]);
    // A pattern property of the wrong type: refused were the schema compiled.
    expect((await over.callTool('shaped', { structured: { x0abc: 7 } }))._unsafeUnwrap().value.structuredContent).toEqual({ x0abc: 7 });
    // At the bound it compiles and is checked.
    const at = lister([`--patterns=${pluginAnswerLimits.maxSchemaPatterns}`]);
    expect((await at.listTools()).isOk()).toBe(true);
    expect((await at.callTool('shaped', { structured: { x0abc: 7 } }))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
  }, 60_000);

  it('a schema of more than maxSchemaNodes objects is not compiled: its tool stays listed, its structuredContent unchecked', async () => {
    const notices: McpPluginNotice[] = [];
    const before = outputSchemaValidators.compileAttempts;
    // About 12 KB of plain string properties: Ajv generates code per subschema, and compile time follows their count.
    const over = lister([`--nodes=${pluginAnswerLimits.maxSchemaNodes + 1}`], undefined, (notice) => notices.push(notice));
    expect((await over.listTools())._unsafeUnwrap().map((tool) => tool.name)).toEqual(['raw', 'shaped']);
    expect(outputSchemaValidators.compileAttempts).toBe(before);
    expect(notices).toEqual([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'nodes' }]);
    expect((await over.callTool('shaped', { structured: { p0: 1 } }))._unsafeUnwrap().isError).toBe(false);
    const at = lister([`--nodes=${pluginAnswerLimits.maxSchemaNodes}`]);
    expect((await at.listTools()).isOk()).toBe(true);
    expect((await at.callTool('shaped', { structured: { p0: 1 } }))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
  }, 60_000);

  it('a tool whose schema is over maxSchemaBytes does not take the other tools with it: all listed and callable, the others still checked, said once per process', async () => {
    const notices: McpPluginNotice[] = [];
    const mismatches: (HostError | undefined)[] = [];
    let changed: () => void = () => undefined;
    // An OpenAPI-derived output schema over the byte bound beside a tool with a small one: the list failed as a whole, every tool unusable.
    const session = lister(
      [`--schema-bytes=${pluginAnswerLimits.maxSchemaBytes + 1_000}`, '--checked'],
      (mismatch) => {
        mismatches.push(mismatch);
        changed();
      },
      (notice) => notices.push(notice),
    );
    const before = outputSchemaValidators.compileAttempts;
    const listed = (await session.listTools())._unsafeUnwrap();
    expect(listed.map((tool) => [tool.name, tool.outputSchemaUnchecked])).toEqual([
      ['raw', undefined],
      ['shaped', 'bytes'],
      ['checked', undefined],
    ]);
    // The schema is still shown as the plugin listed it.
    expect(listed[1]?.outputSchema).toMatchObject({ type: 'object' });
    // The large schema was never compiled (the small one may have been cached by an earlier test).
    expect(outputSchemaValidators.compileAttempts - before).toBeLessThanOrEqual(1);
    const shaped = (await session.callTool('shaped', { structured: { p0: 42, extra: [1] } }))._unsafeUnwrap();
    expect(shaped).toMatchObject({ isError: false, value: { structuredContent: { p0: 42, extra: [1] } } });
    expect((await session.callTool('checked', { structured: { n: 3 } }))._unsafeUnwrap().value.structuredContent).toEqual({ n: 3 });
    const refused = (await session.callTool('checked', { structured: { n: 'three' } }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(refused.message).toContain('output schema');
    expect((await session.callTool('checked', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
    // The same process lists the same tools again: no second notice, nothing else changed.
    for (let relist = 0; relist < 2; relist++) {
      const next = new Promise<void>((resolve) => (changed = resolve));
      expect((await session.callTool('raw', { relist: true }))._unsafeUnwrap().isError).toBe(false);
      await next;
    }
    expect(mismatches).toEqual([undefined, undefined]);
    expect(notices).toEqual([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'bytes', schemaBytes: expect.any(Number) }]);
    expect((notices[0] as { schemaBytes: number }).schemaBytes).toBeGreaterThan(pluginAnswerLimits.maxSchemaBytes);
    expect((await session.callTool('checked', { structured: { n: 'three' } }))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect((await session.callTool('shaped', { structured: { p0: 42 } }))._unsafeUnwrap().isError).toBe(false);
  }, 60_000);

  it('a schema that does not compile is compiled once, not again at each start that lists it', async () => {
    const session = lister(['--broken']);
    const before = outputSchemaValidators.compileAttempts;
    for (let call = 0; call < 3; call++) {
      // Every call starts a process (the last start failed), which lists the same schema.
      const failed = (await session.callTool('raw', {}))._unsafeUnwrapErr();
      expect(failed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
      expect(failed.message).toContain('with an output schema that does not compile');
    }
    expect(outputSchemaValidators.compileAttempts - before).toBe(1);
  }, 60_000);

  it('a plugin listing the same schemas is not charged again after other plugins turned the shared cache over', async () => {
    const schemaBytes = 30_000;
    const mismatches: (HostError | undefined)[] = [];
    let changed: () => void = () => undefined;
    const steady = lister([`--schema-bytes=${schemaBytes}`], (mismatch) => {
      mismatches.push(mismatch);
      changed();
    });
    expect((await steady.listTools()).isOk()).toBe(true);
    // More rounds than the budget holds copies of the schema: before, each round's other plugin (more distinct schemas
    // than the cache keeps) restarted the cache, and the steady plugin's relist compiled and charged its schema again.
    const rounds = Math.floor(pluginAnswerLimits.maxCompiledSchemaBytes / schemaBytes) + 1;
    for (let round = 0; round < rounds; round++) {
      const other = lister([`--many=${pluginAnswerLimits.maxSchemaCacheEntries + 20}`]);
      expect((await other.listTools())._unsafeUnwrap()).toHaveLength(pluginAnswerLimits.maxSchemaCacheEntries + 21);
      await other.close();
      expect(outputSchemaValidators.cached.schemas).toBeLessThanOrEqual(pluginAnswerLimits.maxSchemaCacheEntries);
      const next = new Promise<void>((resolve) => (changed = resolve));
      expect((await steady.callTool('raw', { relist: true }))._unsafeUnwrap().isError).toBe(false);
      await next;
    }
    expect(mismatches).toEqual(Array.from({ length: rounds }, () => undefined));
  }, 180_000);
});

describe('the process-wide cache of compiled output schemas', () => {
  it('holds at most maxSchemaCacheBytes of schema text, whatever the count', () => {
    // Large enums compile fast, so 100 schemas of 30 KB (3 MB, 100 entries: within the count bound) take little time.
    for (let i = 0; i < 100; i++) {
      const values = Array.from({ length: 3_000 }, (_, v) => `c${i}v${v}`);
      const validate = outputSchemaValidators.getValidator<unknown>({ type: 'string', enum: values });
      expect(validate(`c${i}v7`).valid).toBe(true);
    }
    const { schemas, bytes } = outputSchemaValidators.cached;
    expect(bytes).toBeLessThanOrEqual(pluginAnswerLimits.maxSchemaCacheBytes);
    expect(schemas).toBeLessThan(100);
  });
});
