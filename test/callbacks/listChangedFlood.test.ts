/**
 * A plugin that floods the host with notifications/tools/list_changed: the
 * host reads the tool list again at most once more than it already is
 * (a refresh queued and not yet started sees every later change too), so a
 * flood neither queues one tools/list per notification in host memory nor
 * turns into as many round trips.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rm } from 'node:fs/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { eventually, waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const FLOOD = 400;
const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures/plugins/host-list-flood');

const pool = new HostPool();
const built: string[] = [];
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(built.splice(0).map((d) => rm(d, { recursive: true, force: true }))));

describe('a plugin flooding the host with tools/list_changed', () => {
  it(
    'costs at most two tools/list refreshes, however many notifications arrived while the first one waited',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      const pkg = await packageFixturePlugin(FIXTURE, { bundle: ['bin/flood.mjs'] });
      built.push(pkg);
      (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const host = await pool.open(dir);
      let refreshes = 0;
      host.events.on('list_changed', (change) => {
        if (change.plugin_id === 'host-list-flood' && change.list === 'tools') refreshes += 1;
      });

      // Every notification reaches the host while its first refresh waits for the held tools/list answer.
      (await host.call('plug.host-list-flood.flood', { count: FLOOD }))._unsafeUnwrap();
      (await host.call('plug.host-list-flood.release', {}))._unsafeUnwrap();
      await waitUntil(() => refreshes >= 1, 30_000);
      // Bounded look for a third refresh: on a host that queues one per notification it comes at once.
      expect(await eventually(() => refreshes > 2, 3_000)).toBe(false);
    },
    TIMEOUT_MS,
  );
});
