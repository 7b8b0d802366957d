/**
 * An esm-module plugin (Open Discovery manifest, run by the ESM runner in the
 * sandbox) declares sampling as a permission hint; its tool's sampling request
 * is answered by the host application's callback like an MCP plugin's.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { HostPool, textOf } from '../support/hostHarness.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-asker');
const TIMEOUT_MS = 120_000;

const pool = new HostPool();
let runner: BuiltRunner;
let pkg: string;

beforeAll(async () => {
  runner = await buildEsmRunner();
  pkg = await packageFixturePlugin(FIXTURE, { bundle: ['dist/index.mjs'] });
}, 120_000);
afterEach(() => pool.cleanup());
afterAll(async () => {
  await runner.remove();
  await rm(pkg, { recursive: true, force: true });
});

describe('an esm-module plugin asks the host', () => {
  it(
    'gets its declared sampling request answered by the host callback',
    async () => {
      const dir = await pool.profile();
      const options = { esmRunnerArgv: runner.argv };
      const installer = await pool.open(dir, options);
      const installed = await installer.install(pkg, { canary: false });
      if (installed.isErr()) throw installed.error;
      await installer.close();
      const sampling = vi.fn(() => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'the host model' }, model: 'host-model' }));
      const host = await pool.open(dir, { ...options, clientRequests: { sampling } });

      expect((await host.info('esm-asker'))._unsafeUnwrap().granted_capabilities?.client_requests).toEqual(['sampling']);
      const answered = await host.call('plug.esm-asker.ask_model', {});
      if (answered.isErr()) throw answered.error;
      expect(textOf(answered.value)).toBe('the host model');
      expect(sampling).toHaveBeenCalledTimes(1);
    },
    TIMEOUT_MS,
  );
});
