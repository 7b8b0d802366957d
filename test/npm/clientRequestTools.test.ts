/**
 * A server that lists some tools only to a client able to answer their
 * requests (@modelcontextprotocol/server-everything lists
 * trigger-sampling-request and trigger-elicitation-request only when the
 * client announces sampling and elicitation). Installed as an `npm:` server
 * with those client requests granted, its introspection announces them as
 * the installed plugin's sessions do, so the manifest holds those tools and
 * the tool list the plugin gives later matches it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// `ask` is listed only to a client announcing sampling; calling it asks the client's model.
const SAMPLING_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
let sampling = false;
let asked;
createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  const { id, method, params } = message;
  if (method === undefined && id === 'sample') return send({ id: asked, result: { content: [{ type: 'text', text: 'model said ' + message.result.content.text }] } });
  if (id === undefined) return;
  if (method === 'initialize') {
    sampling = params.capabilities?.sampling !== undefined;
    return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'asker', version: '1.0.0' } } });
  }
  if (method === 'tools/list') return send({ id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, ...(sampling ? [{ name: 'ask', inputSchema: { type: 'object' } }] : [])] } });
  if (method === 'tools/call' && params.name === 'ask') {
    asked = id;
    return send({ id: 'sample', method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 } });
  }
  if (method === 'tools/call') return send({ id, result: { content: [{ type: 'text', text: 'echo' }] } });
  send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: client requests granted at install are announced to the introspection', { timeout: 120_000 }, () => {
  it('lists and calls the tool the server offers only to a client that samples', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'asker', source: SAMPLING_SERVER });
    const host = await pool.open(await pool.profile(), {
      profileKind: 'standard',
      activation: 'immediate',
      clientRequests: { sampling: () => ({ role: 'assistant', content: { type: 'text', text: 'yes' }, model: 'probe' }) },
    });
    const installed = await host.install(`npm:${tarball}`, { canary: false, grant: { client_requests: ['sampling'] } });
    expect(installed._unsafeUnwrap().plugin.operations.map((o) => o.tool_name).sort()).toEqual(['ask', 'echo']);
    expect((await host.tools('asker'))._unsafeUnwrap().map((t) => t.name).sort()).toEqual(['ask', 'echo']);
    expect(textOf((await host.call('plug.asker.ask', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('model said yes');

    const wrapped = (await host.wrap(`npm:${tarball}`, { clientRequests: ['sampling'] }))._unsafeUnwrap();
    expect((JSON.parse(wrapped.manifestText) as { advertised_tools: { name: string }[] }).advertised_tools.map((t) => t.name)).toEqual(['echo', 'ask']);
  });
});
