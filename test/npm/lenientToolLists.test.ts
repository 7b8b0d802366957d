/**
 * Tool lists as published servers send them, which the MCP SDK's strict schema
 * refuses and the reference clients accept: @modelcontextprotocol/server-gitlab
 * 2025.4.25 lists every tool with an inputSchema of only `$schema` (no `type`),
 * and servers send `null` for fields they leave out (in a tool, the initialize
 * result, a tools/call result). The host repairs those before the SDK reads
 * them (etc/answer-leniency.json), at install
 * (introspection) and at every start; a schema typed as something else than an
 * object is still refused.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// `search` as server-gitlab lists it; `describe` with nulls where fields are optional, as are the initialize result's instructions and a call
// result's isError and structuredContent; --array-schema: an input schema that is no object schema.
const LENIENT_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const arraySchema = process.argv.includes('--array-schema');
const tools = [
  { name: 'search', description: 'Searches', inputSchema: arraySchema ? { type: 'array' } : { $schema: 'http://json-schema.org/draft-07/schema#' } },
  { name: 'describe', title: null, description: null, inputSchema: { type: 'object' }, outputSchema: null, annotations: { readOnlyHint: null, destructiveHint: true } },
  { name: 'erase', inputSchema: { type: 'object' }, annotations: { destructiveHint: null } },
  { name: 'peek', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true, destructiveHint: null } },
];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'lenient', version: '1.0.0' }, instructions: null } });
  else if (method === 'tools/list') send({ id, result: { tools, nextCursor: null } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: params.name + ' ' + JSON.stringify(params.arguments) }], isError: null, structuredContent: null } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: answers the MCP SDK refuses and the reference clients accept', { timeout: 120_000 }, () => {
  it('installs, lists and calls a server whose input schema has no type and whose optional fields are null', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'lenient', source: LENIENT_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    const installed = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrap();
    // A null hint is dropped as absent, and a tool without a destructiveHint is destructive unless it claims readOnlyHint (MCP's
    // reading, as of open-discovery manifests); never read, since nobody reviewed the claim.
    expect(installed.plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual([
      ['search', 'destructive'],
      ['describe', 'destructive'],
      ['erase', 'destructive'],
      ['peek', 'write'],
    ]);
    const tools = (await host.tools('lenient'))._unsafeUnwrap();
    expect(tools.map((t) => [t.name, t.inputSchema])).toEqual([
      ['search', { type: 'object', $schema: 'http://json-schema.org/draft-07/schema#' }],
      ['describe', { type: 'object' }],
      ['erase', { type: 'object' }],
      ['peek', { type: 'object' }],
    ]);
    expect(tools[2]?.annotations).toEqual({});
    const describeTool = tools[1];
    expect(describeTool).not.toHaveProperty('description');
    expect(describeTool).not.toHaveProperty('outputSchema');
    expect(describeTool?.annotations).toEqual({ destructiveHint: true });
    expect(textOf((await host.call('plug.lenient.search', { search: 'x' }, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('search {"search":"x"}');
    const described = (await host.call('plug.lenient.describe', {}, { maxRisk: 'destructive' }))._unsafeUnwrap();
    expect(textOf(described)).toBe('describe {}');
    expect(described.isError).toBe(false);
  });

  it('still refuses an input schema typed as something else than an object', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'lenient', source: LENIENT_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    const refused = (await host.install(`npm:${tarball}`, { canary: false, args: ['--array-schema'] }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(refused.message).toContain('inputSchema');
  });
});
