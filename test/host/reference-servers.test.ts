/**
 * MCP servers published on npm that nobody here wrote, installed through a
 * manifest (bundled with their entry) and called through PluginHost in the
 * sandbox: @modelcontextprotocol/server-everything, -filesystem and -memory.
 */
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CallProgress } from '../../src/shapes/PluginSession.js';
import { pluginSearchPath } from '../../src/env/pluginPath.js';
import { HostPool, removePackages, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

describe('@modelcontextprotocol/server-everything', () => {
  it('echoes, adds, reports progress, and sees only the environment the host built', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['everything'], { env: { PATH: '/usr/bin:/bin', UNRELATED_SECRET: 'do-not-pass' } });
    expect(textOf((await host.call('plug.host-everything.echo', { message: 'from the host' }))._unsafeUnwrap())).toBe('Echo: from the host');
    expect(textOf((await host.call('plug.host-everything.get-sum', { a: 2, b: 40 }))._unsafeUnwrap())).toContain('42');

    const progress: CallProgress[] = [];
    const long = await host.call('plug.host-everything.trigger-long-running-operation', { duration: 0.8, steps: 4 }, { onProgress: (p) => progress.push(p) });
    expect(textOf(long._unsafeUnwrap())).toContain('Long running operation completed');
    // The SDK client may drop the last notification when it arrives in the same read as the result.
    expect(progress.map((p) => p.progress).slice(0, 3)).toEqual([1, 2, 3]);
    expect(progress.every((p) => p.total === 4)).toBe(true);

    const env = JSON.parse(textOf((await host.call('plug.host-everything.get-env', {}))._unsafeUnwrap())) as Record<string, string>;
    expect(env.HOME).toBe(join(dir, 'data', 'host-everything'));
    expect(env.PATH).toBe(pluginSearchPath('/usr/bin/node'));
    expect(Object.keys(env)).not.toContain('UNRELATED_SECRET');

    // host.tools shows each tool as the server lists it: title, output schema and annotations included.
    const structured = (await host.tools('host-everything'))._unsafeUnwrap().find((t) => t.name === 'get-structured-content');
    expect(structured).toMatchObject({
      title: 'Get Structured Content Tool',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      outputSchema: { type: 'object', properties: { temperature: { type: 'number' }, conditions: { type: 'string' }, humidity: { type: 'number' } } },
    });
    const weather = (await host.call('plug.host-everything.get-structured-content', { location: 'Chicago' }))._unsafeUnwrap();
    if (weather.shape !== 'mcp-plugin') throw new Error(`answered by a ${weather.shape} plugin`);
    expect(weather.value.structuredContent).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String) });

    // Its toggles are write tools: refused under the default read risk.
    expect((await host.call('plug.host-everything.toggle-simulated-logging', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_RISK_NOT_ALLOWED');
  });
});

describe('@modelcontextprotocol/server-filesystem', () => {
  it('works inside its declared directory and cannot write anywhere else', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['filesystem']);
    const dataDir = join(dir, 'data', 'host-filesystem');
    const write = (path: string) => host.call('plug.host-filesystem.write_file', { path, content: 'written by the plugin\n' }, { maxRisk: 'write' });

    expect(textOf((await host.call('plug.host-filesystem.list_allowed_directories', {}))._unsafeUnwrap())).toContain(dataDir);
    // fs_write_dir = "files": that subtree is writable.
    expect((await write(join(dataDir, 'files', 'inside.txt'))).isOk()).toBe(true);
    expect(await readFile(join(dataDir, 'files', 'inside.txt'), 'utf8')).toBe('written by the plugin\n');

    // Inside the server's allowed directory but outside the declared one: the server tries, the sandbox refuses.
    // Its error is MCP-native (a plain-text isError result): the caller gets it intact.
    const outsideDeclared = (await write(join(dataDir, 'outside-declared.txt')))._unsafeUnwrapErr();
    expect(outsideDeclared).toMatchObject({ code: 'PLUGIN_TOOL_ERROR', details: { plugin_id: 'host-filesystem', op_id: 'plug.host-filesystem.write_file' } });
    expect(outsideDeclared.message).toMatch(/EROFS|read-only/);
    expect(outsideDeclared.details.result).toEqual({ content: [{ type: 'text', text: outsideDeclared.message }], isError: true });
    await expect(access(join(dataDir, 'outside-declared.txt'))).rejects.toThrow();

    // Elsewhere on the host: refused, and nothing appears there.
    for (const target of [join(dir, 'escaped.txt'), '/tmp/host-filesystem-escape.txt']) {
      expect((await write(target)).isErr()).toBe(true);
      await expect(access(target)).rejects.toThrow();
    }

    // Files the host puts in its directory are readable to it.
    await writeFile(join(dataDir, 'files', 'from-host.txt'), 'hello plugin\n');
    expect(textOf((await host.call('plug.host-filesystem.read_text_file', { path: join(dataDir, 'files', 'from-host.txt') }))._unsafeUnwrap())).toBe('hello plugin\n');
  });
});

describe('@modelcontextprotocol/server-memory', () => {
  it('keeps its knowledge graph in the plugin data directory across restarts of the plugin', async () => {
    const dir = await pool.profile();
    const first = await pool.installed(dir, ['memory']);
    const created = await first.call(
      'plug.host-memory.create_entities',
      { entities: [{ name: 'PluginHost', entityType: 'library', observations: ['runs plugins in a sandbox'] }] },
      { maxRisk: 'write' },
    );
    expect(created.isOk()).toBe(true);
    await first.close();
    expect(await readFile(join(dir, 'data', 'host-memory', 'memory.jsonl'), 'utf8')).toContain('PluginHost');

    const second = await pool.open(dir);
    const found = JSON.parse(textOf((await second.call('plug.host-memory.search_nodes', { query: 'sandbox' }))._unsafeUnwrap())) as {
      entities: { name: string }[];
    };
    expect(found.entities.map((e) => e.name)).toEqual(['PluginHost']);
    expect((await second.call('plug.host-memory.delete_entities', { entityNames: ['PluginHost'] }, { maxRisk: 'write' }))._unsafeUnwrapErr().code).toBe(
      'PLUGIN_RISK_NOT_ALLOWED',
    );
  });
});
