/**
 * Bounds on the output schemas a running MCP plugin lists beyond their
 * bytes (outputSchemaBudget.test.ts): how many patterns one names, what a
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
import { outputSchemaValidators } from '../../../src/shapes/mcp/outputSchemaValidators.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const LISTER = join(import.meta.dirname, 'fixtures', 'schema-lister.mjs');

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function lister(args: readonly string[], onMismatch?: (mismatch: HostError | undefined) => void): McpSession {
  const session = McpSession.create({
    launch: launchCommand([process.execPath, LISTER, ...args]),
    ...(onMismatch === undefined ? {} : { onToolsChanged: (change) => onMismatch(change.mismatch) }),
  })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

describe('output schemas a running plugin lists', () => {
  it('a schema naming more than maxSchemaPatterns patterns fails the start as PLUGIN_MALFORMED_RESPONSE, uncompiled', async () => {
    const before = outputSchemaValidators.compileAttempts;
    // A few KB, far within the byte bound: each pattern is a regular-expression compile of its own on the host's thread.
    const listed = (await lister([`--patterns=${pluginAnswerLimits.maxSchemaPatterns + 1}`]).listTools())._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase: 'tools/list', tool: 'shaped', schema_bound: 'patterns' });
    expect(listed.message).toContain(`names ${pluginAnswerLimits.maxSchemaPatterns + 1} patterns`);
    expect(outputSchemaValidators.compileAttempts).toBe(before);
    // At the bound it compiles and the start succeeds.
    expect((await lister([`--patterns=${pluginAnswerLimits.maxSchemaPatterns}`]).listTools()).isOk()).toBe(true);
  }, 60_000);

  it('a schema of more than maxSchemaNodes objects fails the start as PLUGIN_MALFORMED_RESPONSE, uncompiled', async () => {
    const before = outputSchemaValidators.compileAttempts;
    // About 12 KB of plain string properties: Ajv generates code per subschema, and compile time follows their count.
    const listed = (await lister([`--nodes=${pluginAnswerLimits.maxSchemaNodes + 1}`]).listTools())._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase: 'tools/list', tool: 'shaped', schema_bound: 'nodes' });
    expect(outputSchemaValidators.compileAttempts).toBe(before);
    expect((await lister([`--nodes=${pluginAnswerLimits.maxSchemaNodes}`]).listTools()).isOk()).toBe(true);
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
