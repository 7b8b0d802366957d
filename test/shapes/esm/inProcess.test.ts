import { afterEach, describe, expect, it } from 'vitest';
import { loadInProcess, loadPlugins } from '../../../src/shapes/esm/loadPlugins.js';
import { prepareServerForPlugins } from '../../../src/shapes/esm/prepareServer.js';
import { ESM_FIXTURES, firstText, serverWithClient } from './helpers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function pair() {
  const p = serverWithClient();
  closers.push(p.close);
  return p;
}

describe('in-process loading of the all-capabilities fixture', () => {
  it('serves the echo tool, the docs resource template and the summarize prompt to an SDK client', async () => {
    const { server, client, connect } = pair();
    const plugin = (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrap();
    await connect();
    expect(plugin.id).toBe('all-capabilities');
    expect(plugin.counts).toEqual({ tools: 2, resources: 1, prompts: 1 });

    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);

    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hello plugin' } });
    expect(firstText(echoed)).toBe('hello plugin');

    const resource = await client.readResource({ uri: 'mcp://docs/42' });
    expect(resource.contents).toEqual([{ uri: 'mcp://docs/42', mimeType: 'text/plain', text: 'Document 42' }]);

    const prompt = await client.getPrompt({ name: 'summarize', arguments: { text: 'a long text' } });
    expect(Array.isArray(prompt.messages)).toBe(true);
    expect(prompt.messages[0]).toEqual({ role: 'user', content: { type: 'text', text: 'Summarize:\na long text' } });
  });

  it('registers a tool whose input is a JSON Schema, validating arguments against it', async () => {
    const { server, client, connect } = pair();
    (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrap();
    await connect();
    const tools = await client.listTools();
    const add = tools.tools.find((t) => t.name === 'add');
    expect(add?.inputSchema.properties).toMatchObject({ a: { type: 'number' }, b: { type: 'number' } });
    expect(add?.inputSchema.required).toEqual(['a', 'b']);
    expect(firstText(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
    const refused = await client.callTool({ name: 'add', arguments: { a: 'two' } });
    expect(refused.isError).toBe(true);
  });

  it('refuses to run plugin code in-process without the explicit trust option', async () => {
    const { server } = pair();
    const error = (await loadInProcess(server, ESM_FIXTURES.allCapabilities, {} as never))._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
    expect(error.message).toContain("trust: 'in-process'");
    const listed = await loadPlugins(server, [ESM_FIXTURES.allCapabilities], { trust: 'elsewhere' } as never);
    expect(listed._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('loads into a connected server prepared before connect, and clients see the new tools', async () => {
    const { server, client, connect } = pair();
    prepareServerForPlugins(server);
    await connect();
    expect((await client.listTools()).tools).toEqual([]);
    expect((await client.listPrompts()).prompts).toEqual([]);
    (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrap();
    expect(firstText(await client.callTool({ name: 'echo', arguments: { text: 'late' } }))).toBe('late');
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(['mcp://docs/{id}']);
  });

  it('explains the SDK refusal when an unprepared server is already connected', async () => {
    const { server, connect } = pair();
    await connect();
    const error = (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
    expect(error.hint).toContain('prepareServerForPlugins');
  });

  it('unload removes every registration of the plugin, and it can be loaded again', async () => {
    const { server, client, connect } = pair();
    const plugin = (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrap();
    await connect();
    plugin.unload();
    expect(plugin.unloaded).toBe(true);
    expect((await client.listTools()).tools).toEqual([]);
    expect((await client.listPrompts()).prompts).toEqual([]);
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
    (await loadInProcess(server, ESM_FIXTURES.allCapabilities, { trust: 'in-process' }))._unsafeUnwrap();
    expect((await client.listTools()).tools).toHaveLength(2);
  });
});
