/**
 * A plugin that answers a call with a well-formed JSON-RPC error saying it
 * could not parse or accept the request (-32700, -32600) has answered: the
 * call fails with PLUGIN_REQUEST_REJECTED carrying the plugin's code and
 * message, and the plugin is not quarantined, since any client able to
 * provoke that answer could otherwise quarantine it for all. The host-deep
 * fixture installed and run in the sandbox, answering with the code asked.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { answered, HostPool, removePackages } from '../support/hostHarness.js';

const DEEP = 'plug.host-deep.deep';
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

describe("a plugin's JSON-RPC error saying the request was malformed", () => {
  it.each([-32600, -32700])('with code %i fails the call without quarantining the plugin; the same process serves the next call', async (code) => {
    const host = await pool.installed(await pool.profile(), ['deep']);
    const quarantines: HostEventMap['quarantine'][] = [];
    host.events.on('quarantine', (event) => quarantines.push(event));
    const spawns: number[] = [];
    host.events.on('spawn', (event) => spawns.push(event.pid));

    for (let attempt = 0; attempt < 3; attempt++) {
      const failed = (await host.call(DEEP, { depth: 1, as: 'error', code }))._unsafeUnwrapErr();
      expect(failed.code).toBe('PLUGIN_REQUEST_REJECTED');
      expect(failed.details).toMatchObject({ jsonrpc_code: code, jsonrpc_message: 'deep' });
    }
    expect(quarantines).toEqual([]);
    expect(answered(await host.list())).toContainEqual(expect.objectContaining({ name: 'host-deep', status: 'active' }));
    expect(answered(await host.call(DEEP, { depth: 1 })).isError).toBe(false);
    expect(spawns).toHaveLength(1);
  });
});
