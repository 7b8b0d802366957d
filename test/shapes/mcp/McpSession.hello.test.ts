import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { errAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { hostError } from '../../../src/errors/HostError.js';
import { McpSession, DEFAULT_MCP_CLIENT_INFO } from '../../../src/shapes/mcp/McpSession.js';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { FAULTY_TOOLS, launchFaulty, launchHello, launchHelloPython } from '../../support/mcpFixtures.js';
import { stopAllTestProcesses } from '../../support/mcpLaunch.js';
import packageJson from '../../../package.json' with { type: 'json' };

const sessions: McpSession[] = [];
const open = (options: Parameters<typeof McpSession.create>[0]): McpSession => {
  const session = McpSession.create(options)._unsafeUnwrap();
  sessions.push(session);
  return session;
};

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

const textOf = (value: { content: { type: string; text?: string }[] }): string => {
  const first = value.content[0];
  if (first?.type !== 'text' || first.text === undefined) throw new Error('no text block');
  return first.text;
};

describe.each([
  ['Node (SDK server)', launchHello],
  ['Python (no dependencies)', launchHelloPython],
])('hello plugin, %s', (_label, launcher) => {
  it('initializes, lists exactly the declared tool and greets', async () => {
    const session = open({ launch: launcher(), expectedTools: ['hello'] });
    const tools = (await session.listTools())._unsafeUnwrap();
    expect(tools.map((t) => t.name)).toEqual(['hello']);
    expect(tools[0]?.description).toBe('Return a deterministic greeting for the given name');
    expect(tools[0]?.inputSchema).toMatchObject({ type: 'object', required: ['name'] });

    const result = (await session.callTool('hello', { name: 'world' }))._unsafeUnwrap();
    expect(result.isError).toBe(false);
    expect(JSON.parse(textOf(result.value))).toEqual({ success: true, data: { greeting: 'Hello, world!' } });
  });

  it('returns the INVALID_INPUT envelope as an isError result, not as a protocol failure', async () => {
    const session = open({ launch: launcher(), expectedTools: ['hello'] });
    const result = (await session.callTool('hello', { name: '' }))._unsafeUnwrap();
    expect(result.isError).toBe(true);
    expect(result.value.isError).toBe(true);
    expect(JSON.parse(textOf(result.value))).toEqual({
      success: false,
      error_code: 'INVALID_INPUT',
      error: 'name must be a non-empty string',
      retryable: false,
    });
  });

  it('refuses a manifest that declares a tool the plugin does not list', async () => {
    const session = open({ launch: launcher(), expectedTools: ['hello', 'goodbye'] });
    const listed = await session.listTools();
    expect(listed._unsafeUnwrapErr().code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(listed._unsafeUnwrapErr().details).toEqual({ undeclared: [], missing: ['goodbye'] });
    const called = await session.callTool('hello', { name: 'x' });
    expect(called._unsafeUnwrapErr().code).toBe('PLUGIN_TOOLS_MISMATCH');
  });
});

describe('hello plugin, protocol details', () => {
  it('sends our clientInfo by default and negotiates 2025-06-18 with a plugin that speaks only the GUM version', async () => {
    expect(DEFAULT_MCP_CLIENT_INFO).toEqual({ name: 'mcp-plugin-host', version: packageJson.version });
    const session = open({ launch: launchHelloPython(), expectedTools: ['hello'] });
    (await session.listTools())._unsafeUnwrap();
    expect(session.protocolVersion).toBe('2025-06-18');
    expect(session.serverInfo).toEqual({ name: 'Hello (Python)', version: '0.1.0' });
  });

  it('sends a configured clientInfo, and the SDK\'s latest protocolVersion, in initialize', async () => {
    let spawned: PluginProcess | undefined;
    const session = open({
      launch: launchFaulty('', { onSpawn: (p) => (spawned = p) }),
      clientInfo: { name: 'my-agent', version: '9.9.9' },
    });
    (await session.listTools())._unsafeUnwrap();
    const line = spawned?.stderrTail().split('\n').find((l) => l.startsWith('received initialize '));
    const params = JSON.parse(line?.slice('received initialize '.length) ?? 'null') as Record<string, unknown>;
    expect(params.clientInfo).toEqual({ name: 'my-agent', version: '9.9.9' });
    expect(params.capabilities).toEqual({});
    expect(params.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect(session.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
  });

  it('does not start the process until the first use', async () => {
    let launches = 0;
    const launch = launchHello();
    const session = open({
      launch: () => {
        launches++;
        return launch();
      },
    });
    expect(launches).toBe(0);
    expect(session.stats().launches).toBe(0);
    await session.callTool('hello', { name: 'a' });
    await session.callTool('hello', { name: 'b' });
    (await session.listTools())._unsafeUnwrap();
    expect(launches).toBe(1);
  });

  it('skips the manifest check when no tools are expected', async () => {
    const session = open({ launch: launchFaulty('extra-tool') });
    const names = (await session.listTools())._unsafeUnwrap().map((t) => t.name);
    expect(names).toContain('undeclared');
  });

  it('refuses a plugin that lists a tool its manifest does not declare, naming it, and stops that process', async () => {
    let spawned: PluginProcess | undefined;
    const session = open({ launch: launchFaulty('extra-tool', { onSpawn: (p) => (spawned = p) }), expectedTools: FAULTY_TOOLS });
    const error = (await session.callTool('echo', { message: 'x' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(error.details).toEqual({ undeclared: ['undeclared'], missing: [] });
    expect(error.message).toContain('undeclared');
    await expect(spawned?.exited).resolves.toBeDefined();
  });

  it('refuses a plugin that misses a declared tool', async () => {
    const session = open({ launch: launchFaulty('missing-tool'), expectedTools: FAULTY_TOOLS });
    const error = (await session.listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TOOLS_MISMATCH');
    expect(error.details).toEqual({ undeclared: [], missing: ['hang'] });
  });

  it('refuses a call to a tool the plugin does not list without sending it', async () => {
    const session = open({ launch: launchHello(), expectedTools: ['hello'] });
    const error = (await session.callTool('nope', {}))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TOOL_NOT_EXPOSED');
    expect(error.details).toMatchObject({ tool: 'nope', listed: ['hello'] });
  });

  it('rejects arguments that are not a JSON object', async () => {
    const session = open({ launch: launchHello() });
    for (const args of [['world'], 'world', null, 7]) {
      expect((await session.callTool('hello', args))._unsafeUnwrapErr().code).toBe('INVALID_ARGS');
    }
    expect(session.stats().launches).toBe(0);
  });

  it('reports invalid options as HOST_INVALID_OPTIONS from create() instead of throwing', () => {
    expect(McpSession.create({ launch: launchHello(), maxInFlight: 0 })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(McpSession.create({ launch: launchHello(), defaultTimeoutMs: Number.NaN })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('passes a launcher failure through unchanged', async () => {
    const refused = open({ launch: () => errAsync(hostError('PLUGIN_EXECUTABLE_UNTRUSTED', 'hash changed')) });
    expect((await refused.callTool('hello', { name: 'x' }))._unsafeUnwrapErr().code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(refused.stats().launches).toBe(0);
  });

  it('fails calls after close with HOST_CLOSED and stops the process', async () => {
    let spawned: PluginProcess | undefined;
    const session = open({ launch: launchHello({ onSpawn: (p) => (spawned = p) }) });
    (await session.callTool('hello', { name: 'x' }))._unsafeUnwrap();
    await session.close();
    expect(spawned?.exitInfo).toBeDefined();
    expect((await session.callTool('hello', { name: 'x' }))._unsafeUnwrapErr().code).toBe('HOST_CLOSED');
  });
});
