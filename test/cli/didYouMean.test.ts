/** A misspelt plugin or tool name gets the installed name nearest it, and `tools` lists a plugin's tools (issue 17). */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, packageHello, tempDir } from './cliHarness.js';

const SLOW = 120_000;

describe('did-you-mean for plugin and tool names', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  const inProfile = (...args: string[]) => cli([...args, '--profile-dir', profile.path]);

  beforeAll(async () => {
    profile = await tempDir('cli-did-you-mean-');
    hello = await packageHello();
    expect((await inProfile('install', hello, '--dev')).code).toBe(0);
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
  });

  it('info, remove and canary with a misspelt plugin name suggest the installed one', { timeout: SLOW }, async () => {
    for (const command of ['info', 'remove', 'canary']) {
      const run = await inProfile(command, 'helo');
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^error PLUGIN_NOT_FOUND: /m);
      expect(run.stderr).toMatch(/^try: did you mean 'hello'\?$/m);
    }
    const asJson = await inProfile('info', 'helo', '--json');
    expect(json(asJson)).toMatchObject({ ok: false, error: { code: 'PLUGIN_NOT_FOUND', did_you_mean: 'hello' } });
  });

  it('run with a misspelt tool suggests the plugin and the nearest of its tools', { timeout: SLOW }, async () => {
    const run = await inProfile('run', 'hello', 'helo', '{}', '--json');
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'VARIANT_NOT_FOUND', did_you_mean: 'hello hello' } });
  });

  it('run with a misspelt plugin suggests the plugin', { timeout: SLOW }, async () => {
    const run = await inProfile('run', 'hallo', 'hello', '{}', '--json');
    expect(json(run)).toMatchObject({ ok: false, error: { did_you_mean: 'hello' } });
  });

  it('tools lists what the plugin offers now, with op id, risk class and schemas; a misspelt plugin gets a did-you-mean', { timeout: SLOW }, async () => {
    const run = await inProfile('tools', 'hello', '--json');
    expect(run.code).toBe(0);
    const { tools } = json(run) as { tools: Array<Record<string, unknown>> };
    expect(tools).toEqual([
      expect.objectContaining({ name: 'hello', op_id: expect.stringMatching(/^plug\.hello\.hello/), risk_class: 'read', inputSchema: expect.objectContaining({ type: 'object' }) }),
    ]);
    const text = await inProfile('tools', 'hello', '--no-color');
    expect(text.stdout).toMatch(/^hello {2}plug\.hello\.hello\S* {2}read$/m);
    expect(text.stdout).toMatch(/^ {2}input +\{"/m);
    expect(json(await inProfile('tools', 'helo', '--json'))).toMatchObject({ ok: false, error: { code: 'PLUGIN_NOT_FOUND', did_you_mean: 'hello' } });
  });

  it('a name nothing is near gets the generic pointer to list', { timeout: SLOW }, async () => {
    const run = await inProfile('info', 'zzzzzzzz');
    expect(run.stderr).toMatch(/^try: mcp-plugin-host list shows what is installed/m);
  });
});
