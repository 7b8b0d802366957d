/**
 * A manifest's request and response schemas (schema_ref) are the plugin
 * author's: their patterns must not hold the host's thread while
 * `host.call` checks arguments and results. Through PluginHost with a real
 * ndjson-rpc plugin subprocess (the host-ndjson echo, which returns its params).
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');

/** Thirty-two `a`s and a `!`: 2^32 backtracking steps for `(a+)+$` on V8's engine. */
const EVIL_TEXT = `${'a'.repeat(32)}!`;

/** The echo plugin whose request schema checks `text` with a pattern RE2 runs, and whose response schema checks `note` with one it cannot. */
async function echoWithEvilPatterns(): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  await addSchemaRef(dir, 'echo', 'host-ndjson.echo', {
    request: { type: 'object', required: ['text'], properties: { text: { type: 'string', pattern: '^(a+)+$' }, note: { type: 'string' } } },
    response: { type: 'object', properties: { note: { type: 'string', pattern: '^(?=a)(a+)+$' } } },
  });
  return dir;
}

describe('schema_ref patterns run bounded at call time', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  it('arguments against a backtracking request pattern are INVALID_ARGS, no process started; a result against a backtracking lookahead is cut', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(await echoWithEvilPatterns(), { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    const host = await pool.open(profile);
    const spawned: number[] = [];
    host.events.on('spawn', (e) => spawned.push(e.pid));

    // On V8's engine this check would not end: the outcome arriving at all is the point.
    const refused = (await host.call('plug.host-ndjson.echo', { text: EVIL_TEXT }))._unsafeUnwrapErr();
    expect(refused.code).toBe('INVALID_ARGS');
    expect(refused.details).toMatchObject({ pointer: '/text' });
    expect(spawned).toEqual([]);

    const cut = (await host.call('plug.host-ndjson.echo', { text: 'aaaa', note: EVIL_TEXT }))._unsafeUnwrapErr();
    expect(cut.code).toBe('PLUGIN_RESPONSE_SCHEMA_VIOLATION');
    expect(cut.message).toMatch(/was cut after \d+ ms of backtracking/);

    expect((await host.call('plug.host-ndjson.echo', { text: 'aaaa', note: 'aa' }))._unsafeUnwrap().value).toEqual({ text: 'aaaa', note: 'aa' });
  });
});
