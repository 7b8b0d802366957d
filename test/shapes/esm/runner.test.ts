import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { spawnPluginProcess } from '../../../src/process/spawnPluginProcess.js';
import { esmRunnerCommand, type EsmRunnerCommandOptions } from '../../../src/shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../../../src/shapes/esm/EsmSession.js';
import { ESM_FIXTURES, firstText, REPO, RUNNER_ARGV, Workspace } from './helpers.js';

const started: PluginProcess[] = [];
const clients: Client[] = [];
const sessions: EsmSession[] = [];
let workspace: Workspace;

beforeAll(async () => {
  workspace = await Workspace.create();
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 500, termGraceMs: 500 })));
});
afterAll(async () => {
  await workspace.remove();
});

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() };

/** An EsmSession whose launcher runs the runner as a plain child (no sandbox). */
function plainSession(root: string, options: EsmRunnerCommandOptions = {}): EsmSession {
  const session = EsmSession.create({
    launch: () => {
      const executable = esmRunnerCommand(root, { runnerArgv: RUNNER_ARGV, ...options })._unsafeUnwrap();
      return spawnPluginProcess({ executable, env: ENV }).map((p) => {
        started.push(p);
        return p;
      });
    },
    startupTimeoutMs: 20_000,
  })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

describe('the ESM runner subprocess', () => {
  it('serves the all-capabilities fixture to an SDK Client over stdio', async () => {
    const [command, ...args] = RUNNER_ARGV;
    const transport = new StdioClientTransport({ command: command!, args: [...args, '--', ESM_FIXTURES.allCapabilities], env: ENV, stderr: 'pipe' });
    const client = new Client({ name: 'esm-runner-test', version: '0.0.0' });
    clients.push(client);
    await client.connect(transport);

    expect(client.getServerVersion()).toMatchObject({ name: 'all-capabilities', version: '1.0.0' });
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } }))).toBe('over stdio');
    const resource = await client.readResource({ uri: 'mcp://docs/7' });
    expect(resource.contents[0]).toMatchObject({ uri: 'mcp://docs/7', text: 'Document 7' });
    const prompt = await client.getPrompt({ name: 'summarize', arguments: { text: 't' } });
    expect(Array.isArray(prompt.messages)).toBe(true);
    expect(prompt.messages).toHaveLength(1);
  });

  it("numbers the plugin's requests to the host from 1: the host's SDK Client drops a cancel of request id 0", async () => {
    const [command, ...args] = RUNNER_ARGV;
    const asker = join(REPO, 'fixtures/plugins/esm-asker');
    const transport = new StdioClientTransport({ command: command!, args: [...args, '--', asker], env: ENV, stderr: 'pipe' });
    const client = new Client({ name: 'esm-runner-test', version: '0.0.0' }, { capabilities: { sampling: {} } });
    clients.push(client);
    const ids: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (_request, extra) => {
      ids.push(extra.requestId);
      return { role: 'assistant', content: { type: 'text', text: `answer ${ids.length}` }, model: 'm' };
    });
    await client.connect(transport);

    expect(firstText(await client.callTool({ name: 'ask_model', arguments: {} }))).toBe('answer 1');
    expect(firstText(await client.callTool({ name: 'ask_model', arguments: {} }))).toBe('answer 2');
    expect(ids).toEqual([1, 2]);
  });

  it('runs as an esm-module PluginSession through the host spawner', async () => {
    const session = plainSession(ESM_FIXTURES.allCapabilities);
    expect(session.shape).toBe('esm-module');
    const tools = (await session.listTools())._unsafeUnwrap();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    const result = (await session.callTool('echo', { text: 'via session' }))._unsafeUnwrap();
    expect(firstText(result.value)).toBe('via session');
  });

  it('reports a plugin without createPlugin as PLUGIN_ENTRY_INVALID, not as a crash', async () => {
    const error = (await plainSession(ESM_FIXTURES.noCreatePlugin).listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENTRY_INVALID');
    expect(error.message).toContain('does not export createPlugin(server)');
    expect(error.details['exit']).toMatchObject({ code: 78 });
  });

  it('passes strict capabilities to the runner, which then refuses a mismatching plugin', async () => {
    const lenient = plainSession(ESM_FIXTURES.undeclared);
    expect((await lenient.listTools())._unsafeUnwrap().map((t) => t.name).sort()).toEqual(['ping', 'pong']);
    const error = (await plainSession(ESM_FIXTURES.undeclared, { strictCapabilities: true }).listTools())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CAPABILITY_MISMATCH');
  });

  it('keeps stdout for MCP when the plugin prints to console and process.stdout', async () => {
    const root = await workspace.plugin({
      name: 'noisy',
      tools: ['shout'],
      source: [
        "import { z } from 'zod';",
        "console.log('printed while importing');",
        'export function createPlugin(server) {',
        "  process.stdout.write('written to stdout\\n');",
        "  server.registerTool('shout', { description: 'shouts', inputSchema: { text: z.string() } }, async ({ text }) => {",
        "    console.log('printed in a handler');",
        "    return { content: [{ type: 'text', text: text.toUpperCase() }] };",
        '  });',
        '}',
      ].join('\n'),
    });
    const session = plainSession(root);
    const result = (await session.callTool('shout', { text: 'quiet' }))._unsafeUnwrap();
    expect(firstText(result.value)).toBe('QUIET');
    expect(session.stats().stdoutViolations).toBe(0);
  });
});

describe('esmRunnerCommand', () => {
  it('builds the runner command line with the flags and the real plugin root, and the paths a sandbox must read', () => {
    const executable = esmRunnerCommand(ESM_FIXTURES.allCapabilities, {
      runnerArgv: RUNNER_ARGV,
      strictCapabilities: true,
      strictTools: true,
      createTimeoutMs: 5000,
      watch: true,
    })._unsafeUnwrap();
    expect(executable.argv).toEqual([...RUNNER_ARGV, '--strict-capabilities', '--strict-tools', '--create-timeout-ms', '5000', '--watch', '--', ESM_FIXTURES.allCapabilities]);
    expect(executable.installRoot).toBe(ESM_FIXTURES.allCapabilities);
    expect(executable.readOnlyPaths).toContain(ESM_FIXTURES.allCapabilities);
    // The folders of the dependencies the runner resolves, never the whole node_modules beside them.
    expect(executable.readOnlyPaths).toContain(join(REPO, 'node_modules', '@modelcontextprotocol', 'sdk'));
    expect(executable.readOnlyPaths).toContain(join(REPO, 'node_modules', 'zod'));
    expect(executable.readOnlyPaths).not.toContain(join(REPO, 'node_modules'));
  });

  it('fails with HOST_INVALID_OPTIONS when the runner script is missing', () => {
    const error = esmRunnerCommand(ESM_FIXTURES.allCapabilities, { runnerArgv: [process.execPath, join(REPO, 'no-such-runner.js')] })._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
  });

  it('fails with PLUGIN_ENTRY_INVALID when the plugin root does not exist', () => {
    expect(esmRunnerCommand(join(REPO, 'fixtures/plugins/no-such-plugin'), { runnerArgv: RUNNER_ARGV })._unsafeUnwrapErr().code).toBe('PLUGIN_ENTRY_INVALID');
  });
});
