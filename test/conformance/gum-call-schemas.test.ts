/**
 * Seed 001 (GUM author guide), schema_ref: the request and response schemas
 * a variant references are applied at call time, through PluginHost with a
 * real ndjson-rpc plugin subprocess.
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-ndjson');

/** The host-ndjson echo plugin (its `echo` returns its params) with a schema bundle for `echo`. */
async function echoWithSchemas(): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/echo.mjs'] });
  await addSchemaRef(dir, 'echo', 'host-ndjson.echo', {
    request: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    response: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 5 } } },
  });
  return dir;
}

describe('seed 001 schema_ref: request and response schemas at call time', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  async function host() {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(await echoWithSchemas(), { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    const opened = await pool.open(profile);
    const spawned: number[] = [];
    opened.events.on('spawn', (e) => spawned.push(e.pid));
    return { host: opened, spawned };
  }

  it('schema_ref request_ref: arguments breaking the request schema are INVALID_ARGS with the pointer, and no process is spawned', async () => {
    const { host: h, spawned } = await host();
    const error = (await h.call('plug.host-ndjson.echo', { text: 42 }))._unsafeUnwrapErr();
    expect(error.code).toBe('INVALID_ARGS');
    expect(error.details).toMatchObject({ pointer: '/text', plugin_id: 'host-ndjson', op_id: 'plug.host-ndjson.echo' });
    expect(spawned).toEqual([]);
  });

  it('schema_ref response_ref: a result breaking the response schema is PLUGIN_RESPONSE_SCHEMA_VIOLATION with the pointer', async () => {
    const { host: h } = await host();
    const error = (await h.call('plug.host-ndjson.echo', { text: 'much too long' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_RESPONSE_SCHEMA_VIOLATION');
    expect(error.details).toMatchObject({ pointer: '/text', plugin_id: 'host-ndjson' });
  });

  it('schema_ref: a call whose arguments and result match both schemas succeeds; a tool without schema_ref is not checked', async () => {
    const { host: h, spawned } = await host();
    expect((await h.call('plug.host-ndjson.echo', { text: 'hi' }))._unsafeUnwrap().value).toEqual({ text: 'hi' });
    expect((await h.call('plug.host-ndjson.ping', 17))._unsafeUnwrap().value).toBe('pong');
    expect(spawned).toHaveLength(1);
  });
});
