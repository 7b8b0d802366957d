/**
 * A running MCP plugin lists an output schema within every compile bound
 * whose one validation walks exponentially many paths (review R13 F2: a $ref
 * DAG of 29 levels held the host's shared thread 2.9 s per answer). Past the
 * expansion bound its tool stays listed and callable, its structuredContent
 * unchecked and said so once (bound `expansion`), and the schema is never
 * compiled; a recursive schema within the bound is still compiled and checked.
 * Real plugin processes (fixtures/schema-lister.mjs --schema-file).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { McpPluginNotice } from '../../../src/shapes/mcp/McpSurface.js';
import { outputSchemaValidators } from '../../../src/shapes/mcp/outputSchemaValidators.js';
import { anyOfRecursion, nestedX, refDag } from '../../support/expensiveSchemas.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const LISTER = join(import.meta.dirname, 'fixtures', 'schema-lister.mjs');
const dir = mkdtempSync(join(tmpdir(), 'mph-schema-expansion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

/** A plugin process listing `shaped` with `schema` as its output schema, its notices gathered. */
function lister(name: string, schema: unknown): { session: McpSession; notices: McpPluginNotice[] } {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(schema));
  const notices: McpPluginNotice[] = [];
  const session = McpSession.create({ launch: launchCommand([process.execPath, LISTER, `--schema-file=${file}`]), onNotice: (notice) => notices.push(notice) })._unsafeUnwrap();
  sessions.push(session);
  return { session, notices };
}

describe('output schemas whose validation is exponential', () => {
  it.each([
    ['a $ref DAG of 29 levels (2^29 paths per answer)', 'dag', refDag(29)],
    ['the same by $anchor refs', 'dag-anchors', refDag(29, true)],
    ['recursion with fan-out 2 on one member (2^depth paths)', 'anyof-recursion', anyOfRecursion()],
  ])('%s: its tool stays listed and callable, its structuredContent unchecked, bound expansion', async (_name, file, schema) => {
    const before = outputSchemaValidators.compileAttempts;
    const { session, notices } = lister(file, schema);
    const listed = (await session.listTools())._unsafeUnwrap();
    expect(listed.map((tool) => [tool.name, tool.outputSchemaUnchecked])).toEqual([
      ['raw', undefined],
      ['shaped', 'expansion'],
    ]);
    expect(notices).toEqual([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'expansion', schemaBytes: expect.any(Number) }]);
    // Never compiled, so never validated against: the answers pass as the plugin wrote them.
    expect(outputSchemaValidators.compileAttempts).toBe(before);
    for (const structured of [{ a: 1 }, nestedX(40), { x: 'not an object' }]) {
      expect((await session.callTool('shaped', { structured }))._unsafeUnwrap().value.structuredContent).toEqual(structured);
    }
  }, 60_000);

  it('a recursive JSON-value schema (zod json()) within the bound is compiled and checked', async () => {
    const value = { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }, { type: 'array', items: { $ref: '#/$defs/value' } }, { type: 'object', additionalProperties: { $ref: '#/$defs/value' } }] };
    const { session, notices } = lister('json-value', { type: 'object', $defs: { value }, properties: { data: { $ref: '#/$defs/value' } }, required: ['data'] });
    const listed = (await session.listTools())._unsafeUnwrap();
    expect(listed.map((tool) => [tool.name, tool.outputSchemaUnchecked])).toEqual([
      ['raw', undefined],
      ['shaped', undefined],
    ]);
    expect(notices).toEqual([]);
    const deep = { data: { a: [1, 'two', { b: [null, true] }], c: nestedX(40) } };
    expect((await session.callTool('shaped', { structured: deep }))._unsafeUnwrap().value.structuredContent).toEqual(deep);
    const wrong = (await session.callTool('shaped', { structured: { other: nestedX(3) } }))._unsafeUnwrapErr();
    expect(wrong.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(wrong.message).toContain('output schema');
  }, 60_000);
});
