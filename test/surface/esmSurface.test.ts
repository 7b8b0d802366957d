/**
 * Resources, prompts and logging of an installed `esm-module` plugin through
 * PluginHost: the all-capabilities fixture packaged as its author would ship
 * it, run by the ESM runner (built as the package ships it) in the sandbox.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { HostPool } from '../support/hostHarness.js';

const ID = 'all-capabilities';
const pool = new HostPool();
let runner: BuiltRunner;
let pkg: string;

beforeAll(async () => {
  runner = await buildEsmRunner();
  pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-all-capabilities'), { bundle: ['dist/index.mjs'] });
}, 120_000);
afterEach(() => pool.cleanup());
afterAll(async () => {
  await runner.remove();
  await rm(pkg, { recursive: true, force: true });
});

describe('the MCP surface of an esm-module plugin through PluginHost', () => {
  it('lists its resource template, reads a resource, gets its prompt and sets its log level, all in the runner', async () => {
    const dir = await pool.profile();
    const options = { esmRunnerArgv: runner.argv };
    const installer = await pool.open(dir, options);
    (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, options);
    const spawns: boolean[] = [];
    host.events.on('spawn', (e) => spawns.push(e.sandboxed));

    expect((await host.resourceTemplates(ID))._unsafeUnwrap().map((t) => t.uriTemplate)).toEqual(['mcp://docs/{id}']);
    const read = (await host.readResource(ID, 'mcp://docs/42'))._unsafeUnwrap();
    expect(read.contents).toEqual([{ uri: 'mcp://docs/42', mimeType: 'text/plain', text: 'Document 42' }]);
    const prompt = (await host.getPrompt(ID, 'summarize', { text: 'the sandbox' }))._unsafeUnwrap();
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Summarize:\nthe sandbox' } }]);
    expect((await host.setLogLevel(ID, 'warning')).isOk()).toBe(true);
    // The runner announces no subscriptions: a plugin has no way to send updates.
    expect((await host.subscribeResource(ID, 'mcp://docs/42'))._unsafeUnwrapErr().code).toBe('PLUGIN_METHOD_NOT_FOUND');
    expect(spawns).toEqual([true]);
  }, 90_000);
});
