/**
 * McpSession against MCP servers published on npm that nobody here wrote:
 * the reference servers of the modelcontextprotocol project.
 */
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { CallProgress } from '../../../src/shapes/PluginSession.js';
import { npmServerEntry } from '../../support/mcpFixtures.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

let dir: string;
const sessions: McpSession[] = [];
const open = (session: McpSession): McpSession => {
  sessions.push(session);
  return session;
};

beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'mcp-ref-')));
});

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
  await rm(dir, { recursive: true, force: true });
});

const textOf = (value: { content: { type: string; text?: string }[] }): string => {
  const first = value.content[0];
  if (first?.type !== 'text' || first.text === undefined) throw new Error('no text block');
  return first.text;
};

describe('@modelcontextprotocol/server-everything', () => {
  const launch = () => launchCommand([process.execPath, npmServerEntry('@modelcontextprotocol/server-everything'), 'stdio']);

  it('lists its tools and echoes', async () => {
    const session = open(McpSession.create({ launch: launch() })._unsafeUnwrap());
    const names = (await session.listTools())._unsafeUnwrap().map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'get-sum', 'trigger-long-running-operation']));
    const result = (await session.callTool('echo', { message: 'hi from the host' }))._unsafeUnwrap();
    expect(result.isError).toBe(false);
    expect(textOf(result.value)).toBe('Echo: hi from the host');
  });

  it('reports progress of its long-running operation and finishes under a timeout shorter than the whole run', async () => {
    const session = open(McpSession.create({ launch: launch() })._unsafeUnwrap());
    // Started first: the call's 1.2 s also count while the server starts, and this test is about progress.
    expect((await session.listTools()).isOk()).toBe(true);
    const progress: CallProgress[] = [];
    const result = await session.callTool(
      'trigger-long-running-operation',
      { duration: 1.5, steps: 5 },
      { timeoutMs: 1200, onProgress: (p) => progress.push(p) },
    );
    expect(textOf(result._unsafeUnwrap().value)).toContain('Long running operation completed');
    expect(progress.length).toBeGreaterThanOrEqual(4);
    expect(progress[0]).toMatchObject({ progress: 1, total: 5 });
  });

  it('returns its own validation failure for bad arguments as an isError result', async () => {
    const session = open(McpSession.create({ launch: launch() })._unsafeUnwrap());
    const result = (await session.callTool('get-sum', { a: 'one', b: 2 }))._unsafeUnwrap();
    expect(result.isError).toBe(true);
    expect(textOf(result.value)).toContain('Input validation error');
  });
});

describe('@modelcontextprotocol/server-filesystem', () => {
  const launch = (allowed: string) => launchCommand([process.execPath, npmServerEntry('@modelcontextprotocol/server-filesystem'), allowed]);

  it('lists and reads files inside the directory passed as argv', async () => {
    await writeFile(join(dir, 'notes.txt'), 'plugins live in subprocesses\n');
    const session = open(McpSession.create({ launch: launch(dir) })._unsafeUnwrap());
    const listing = (await session.callTool('list_directory', { path: dir }))._unsafeUnwrap();
    expect(listing.isError).toBe(false);
    expect(textOf(listing.value)).toContain('[FILE] notes.txt');
    expect(listing.value.structuredContent).toEqual({ content: textOf(listing.value) });
    const read = (await session.callTool('read_text_file', { path: join(dir, 'notes.txt') }))._unsafeUnwrap();
    expect(textOf(read.value)).toBe('plugins live in subprocesses\n');
  });

  it('answers a read outside the allowed directory with an isError result', async () => {
    const session = open(McpSession.create({ launch: launch(dir) })._unsafeUnwrap());
    const result = (await session.callTool('read_text_file', { path: '/etc/hostname' }))._unsafeUnwrap();
    expect(result.isError).toBe(true);
    expect(textOf(result.value)).toMatch(/denied|outside/i);
  });
});

describe('@modelcontextprotocol/server-memory', () => {
  it('stores entities (structured output validated by the SDK) and reads the graph back', async () => {
    const memoryFile = join(dir, 'memory.jsonl');
    const session = open(
      McpSession.create({
        launch: launchCommand([process.execPath, npmServerEntry('@modelcontextprotocol/server-memory')], { env: { MEMORY_FILE_PATH: memoryFile } }),
      })._unsafeUnwrap(),
    );
    const entity = { name: 'mcp-plugin-host', entityType: 'library', observations: ['runs plugins in subprocesses'] };
    const created = (await session.callTool('create_entities', { entities: [entity] }))._unsafeUnwrap();
    expect(created.value.structuredContent).toEqual({ entities: [entity] });
    const graph = (await session.callTool('read_graph', {}))._unsafeUnwrap();
    expect(JSON.parse(textOf(graph.value))).toMatchObject({ entities: [entity] });
    expect(await readFile(memoryFile, 'utf8')).toContain('mcp-plugin-host');
  });
});
