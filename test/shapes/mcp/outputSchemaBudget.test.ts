/**
 * The output schemas a running MCP plugin lists are compiled on the host's
 * own thread (Ajv), which every plugin and the gateway share, and a plugin
 * may list new ones at every `tools/list_changed`. Real plugin processes
 * (mcp-raw --schema-bytes=N: `shaped`'s output schema about N bytes, new at
 * every list) through McpSession.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { HostError } from '../../../src/errors/HostError.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const RAW = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'plugins', 'mcp-raw', 'bin', 'mcp-raw.mjs');

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function rawPlugin(schemaBytes: number, onMismatch?: (mismatch: HostError | undefined) => void): McpSession {
  const session = McpSession.create({
    launch: launchCommand([process.execPath, RAW, `--schema-bytes=${schemaBytes}`]),
    expectedTools: ['shaped', 'raw'],
    ...(onMismatch === undefined ? {} : { onToolsChanged: (change) => onMismatch(change.mismatch) }),
  })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

describe('output schemas of a running plugin', () => {
  it('a schema larger than maxSchemaBytes (the manifest schemas\' bound too) fails the start as PLUGIN_MALFORMED_RESPONSE, uncompiled', async () => {
    // 1,000 bytes over 32 KiB: R8's first bound (64 KiB) compiled it on the host's thread and the start succeeded.
    const session = rawPlugin(pluginAnswerLimits.maxSchemaBytes + 1_000);
    const listed = (await session.listTools())._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase: 'tools/list', tool: 'shaped', schema_bound: 'bytes', max_schema_bytes: pluginAnswerLimits.maxSchemaBytes });
  }, 60_000);

  it('new schemas at every list_changed stop being compiled once the process compiled maxCompiledSchemaBytes', async () => {
    const schemaBytes = 30_000;
    const mismatches: (HostError | undefined)[] = [];
    let changed: () => void = () => undefined;
    const session = rawPlugin(schemaBytes, (mismatch) => {
      mismatches.push(mismatch);
      changed();
    });
    expect((await session.listTools()).isOk()).toBe(true);
    // The start compiled one schema; each relist lists a new one (each a little over schemaBytes), the last past the budget.
    const relists = Math.floor(pluginAnswerLimits.maxCompiledSchemaBytes / schemaBytes);
    for (let i = 0; i < relists; i++) {
      const next = new Promise<void>((resolve) => (changed = resolve));
      expect((await session.callTool('raw', { relist: true }))._unsafeUnwrap().isError).toBe(false);
      await next;
    }
    expect(mismatches.slice(0, relists - 1)).toEqual(Array.from({ length: relists - 1 }, () => undefined));
    // Before the budget every list compiled its new schema, however many came.
    expect(mismatches.at(-1)?.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(mismatches.at(-1)?.details).toMatchObject({ tool: 'shaped', max_compiled_schema_bytes: pluginAnswerLimits.maxCompiledSchemaBytes });
  }, 120_000);
});
