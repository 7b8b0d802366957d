/**
 * Output schemas are compiled once per process, not at every start of a
 * plugin: the published server-everything lists one tool with an output
 * schema, started here by four sessions one after another. Its structured
 * content is still checked against that schema.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { outputSchemaValidators } from '../../../src/shapes/mcp/outputSchemaValidators.js';
import { npmServerEntry } from '../../support/mcpFixtures.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

const everything = (): McpSession => {
  const session = McpSession.create({ launch: launchCommand([process.execPath, npmServerEntry('@modelcontextprotocol/server-everything'), 'stdio']) })._unsafeUnwrap();
  sessions.push(session);
  return session;
};

describe('output schema validators shared by the connections of a process', () => {
  it('compiles an output schema once across sessions and restarted processes, and structured content still comes back', async () => {
    const before = outputSchemaValidators.compiledSchemas;
    // Four sessions one after another: four processes, four SDK Clients.
    for (let start = 0; start < 4; start++) {
      const session = everything();
      const tools = (await session.listTools())._unsafeUnwrap();
      expect(tools.filter((t) => t.outputSchema !== undefined).map((t) => t.name)).toEqual(['get-structured-content']);
      const result = (await session.callTool('get-structured-content', { location: 'Chicago' }))._unsafeUnwrap();
      expect(result.value.structuredContent).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String) });
      await session.close();
    }
    expect(outputSchemaValidators.compiledSchemas - before).toBe(1);
  });
});
