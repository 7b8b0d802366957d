/**
 * The published @modelcontextprotocol/server-everything, unmodified, in the
 * sandbox: declared sampling and roots are announced to it at initialize, so
 * it offers its trigger-sampling-request and get-roots-list tools, and its own
 * sampling/createMessage and roots/list requests are answered by the host
 * application's callbacks.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ClientRequestContext } from '../../src/host/PluginHost.js';
import { HostPool } from '../support/hostHarness.js';
import { everythingPackage, removeCallbackPackages } from './callbackPlugin.js';

const TIMEOUT_MS = 120_000;

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removeCallbackPackages());

const textOf = (value: unknown): string => (value as { content: { type: string; text?: string }[] }).content.map((c) => c.text ?? '').join('\n');

describe('server-everything asks the host', () => {
  it(
    'answers its sampling request and lists the host roots it asked for',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(await everythingPackage(['sampling', 'roots'], ['trigger-sampling-request', 'get-roots-list']), { canary: false }))._unsafeUnwrap();
      await installer.close();
      const sampling = vi.fn((_params: unknown, _context: ClientRequestContext) => ({ role: 'assistant' as const, content: { type: 'text' as const, text: 'a haiku from the host' }, model: 'host-model' }));
      const roots = vi.fn(() => ({ roots: [{ uri: 'file:///srv/project', name: 'project' }] }));
      const host = await pool.open(dir, { clientRequests: { sampling, roots } });

      const sampled = await host.call('plug.host-everything.trigger-sampling-request', { prompt: 'write a haiku', maxTokens: 50 });
      expect(textOf(sampled._unsafeUnwrap().value)).toContain('a haiku from the host');
      expect(sampling.mock.calls[0]?.[0]).toMatchObject({ maxTokens: 50, messages: [{ role: 'user', content: { type: 'text' } }] });
      expect(sampling.mock.calls[0]?.[1]).toMatchObject({ plugin_id: 'host-everything', op_id: 'plug.host-everything.trigger-sampling-request' });

      const listed = await host.call('plug.host-everything.get-roots-list', {});
      expect(textOf(listed._unsafeUnwrap().value)).toContain('file:///srv/project');
      expect(roots).toHaveBeenCalled();
    },
    TIMEOUT_MS,
  );
});
