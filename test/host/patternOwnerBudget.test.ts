/**
 * One plugin's schema patterns must not hold the host's thread for every
 * other plugin. A manifest request pattern that RE2 cannot run (lookaround)
 * and that backtracks on any ordinary argument was cut at 100 ms at every
 * call, indefinitely: the host's thread, and every other plugin's calls, waited
 * through each. Through PluginHost with two real ndjson-rpc plugin
 * subprocesses (the host-ndjson echo, installed twice under two ids).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import settings from '../../etc/untrusted-patterns.json' with { type: 'json' };
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');

/** The echo under `pluginId`, its `text` argument checked against `pattern`. */
async function echoWithRequestPattern(pluginId: string, pattern: string): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  const manifestPath = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>;
  await writeFile(manifestPath, JSON.stringify({ ...manifest, plugin_id: pluginId, namespace_owner: `io.example.${pluginId}` }));
  await addSchemaRef(dir, 'echo', `${pluginId}.echo`, {
    request: { type: 'object', required: ['text'], properties: { text: { type: 'string', pattern } } },
    response: { type: 'object' },
  });
  return dir;
}

describe("a plugin's backtracking patterns cost the host's thread a bounded share", () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  it('past its budget per window its matches are refused unrun; another plugin\'s lookaround patterns still run', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    // (.*.*)* inside a negative lookahead: exponential on any string without a NUL, so every ordinary argument is cut.
    for (const [id, pattern] of [['evil-patterns', '^(?!(.*.*)*\\u0000)'], ['fair-patterns', '^(?=.*a)']] as const) {
      const installed = await installer.install(await echoWithRequestPattern(id, pattern), { canary: false });
      if (installed.isErr()) throw installed.error;
    }
    await installer.close();
    const host = await pool.open(profile);

    const messages: string[] = [];
    for (let call = 0; call < 8; call++) {
      const refused = (await host.call('plug.evil-patterns.echo', { text: 'an ordinary argument, forty characters!' }))._unsafeUnwrapErr();
      expect(refused.code).toBe('INVALID_ARGS');
      messages.push(refused.message);
    }
    const cut = messages.filter((m) => /was cut after \d+ ms of backtracking/.test(m)).length;
    const unrun = messages.filter((m) => m.includes(`plugin 'evil-patterns' spent its ${settings.ownerBudgetMs} ms of backtracking matches`)).length;
    // Each cut spends at most a validation's budget, so the plugin's budget allows this many before its matches stop running.
    expect(cut).toBeLessThanOrEqual(Math.ceil(settings.ownerBudgetMs / settings.nativeBudgetMs));
    expect(cut + unrun).toBe(messages.length);

    expect((await host.call('plug.fair-patterns.echo', { text: 'a fair argument' }))._unsafeUnwrap().value).toEqual({ text: 'a fair argument' });
    expect((await host.call('plug.fair-patterns.echo', { text: 'no letter A here' }))._unsafeUnwrapErr().code).toBe('INVALID_ARGS');
  });

  it("one caller's arguments spend its own share of a plugin's budget, not another caller's", async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    // (a+)+$ inside a negative lookahead: exponential on a run of a's that does not end the string, instant on anything else.
    const installed = await installer.install(await echoWithRequestPattern('shared-patterns', '^(?!(a+)+$)'), { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    const host = await pool.open(profile);
    const alice = { id: 'alice', transport: 'http' };
    const bob = { id: 'bob', transport: 'http' };

    const backtracking = { text: `${'a'.repeat(40)}!` };
    const calls = Math.ceil(settings.ownerBudgetMs / settings.nativeBudgetMs) + 1;
    const messages: string[] = [];
    for (let call = 0; call < calls; call++) {
      const refused = (await host.call('plug.shared-patterns.echo', backtracking, { caller: alice }))._unsafeUnwrapErr();
      expect(refused.code).toBe('INVALID_ARGS');
      messages.push(refused.message);
    }
    // The caller is named by its fair-share key, whose spelling is hostConfig's: its id and transport appear in it.
    expect(messages.at(-1)).toMatch(new RegExp(`caller '[^']*http[^']*alice[^']*' of plugin 'shared-patterns' spent its ${settings.ownerBudgetMs} ms of backtracking matches`));

    // Bob's and the application's arguments still run through the same lookaround pattern, on their own budgets.
    expect((await host.call('plug.shared-patterns.echo', { text: 'bob asks' }, { caller: bob }))._unsafeUnwrap().value).toEqual({ text: 'bob asks' });
    expect((await host.call('plug.shared-patterns.echo', { text: 'the application asks' }))._unsafeUnwrap().value).toEqual({ text: 'the application asks' });
    expect((await host.call('plug.shared-patterns.echo', backtracking, { caller: alice }))._unsafeUnwrapErr().message).toMatch(/caller '[^']*alice[^']*' of plugin/);
  });
});
