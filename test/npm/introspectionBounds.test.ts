/**
 * The sandboxed start that asks a server without a manifest for its tools
 * ends, whatever the server answers: a server that hands out a next cursor
 * on every tools/list page is stopped after the page bound of
 * etc/npm-install.json, with the tools it listed dropped.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import settings from '../../etc/npm-install.json' with { type: 'json' };
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
afterAll(() => pool.cleanup());

// Every tools/list page names one tool and a cursor to the next page, without end.
const ENDLESS_PAGES_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
let served = 0;
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'pager', version: '1.0.0' } } });
  else if (method === 'tools/list') {
    served += 1;
    send({ id, result: { tools: [{ name: 'tool' + served, inputSchema: { type: 'object' } }], nextCursor: 'page' + served } });
  } else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packPager(dir: string): Promise<string> {
  const pkg = join(dir, 'pager');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'pager.mjs'), ENDLESS_PAGES_SERVER, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'pager', version: '1.0.0', type: 'module', bin: { pager: 'bin/pager.mjs' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'pager-1.0.0.tgz');
}

describe('introspection bounds', () => {
  it('stops a server whose tools/list pages never end, after the page bound', { timeout: 120_000 }, async () => {
    const tarball = await packPager(await pool.profile());
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const wrapped = await host.wrap(`npm:${tarball}`);
    expect(wrapped._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_HANDSHAKE_FAILED',
      message: expect.stringContaining(`did not end after ${settings.introspectionMaxToolPages} pages`),
      details: { reason: 'introspection' },
    });
  });
});
