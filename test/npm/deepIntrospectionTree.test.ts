/**
 * A server started once at install to list its tools (introspection) can
 * write in its throwaway data directory, below the install's staging
 * directory, and with relative mkdir and chdir build a tree deeper than the
 * system's path limit. Node's recursive rm failed on it (ENAMETOOLONG): the
 * install failed with HOST_IO_ERROR and the staging directory stayed behind
 * for as long as the host ran (its owner, the host, was alive). Deleting it
 * goes however deep the tree is (src/installer/removeTree.ts).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// Before it answers, it builds a chain of 48 directories of 100 characters in its HOME, each step relative.
const DIGGING_SERVER = `#!/usr/bin/env node
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createInterface } from 'node:readline';
process.chdir(homedir());
for (let i = 0; i < 48; i++) {
  mkdirSync('d'.repeat(100));
  process.chdir('d'.repeat(100));
}
writeFileSync('deep', 'x');
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'digger', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'dig', inputSchema: { type: 'object' }, annotations: { destructiveHint: false } }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: an introspected server that leaves a tree past the path limit', { timeout: 120_000 }, () => {
  it('installs, and its staging directory is gone', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'digger', source: DIGGING_SERVER });
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard' });
    const installed = await host.install(`npm:${tarball}`, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? { code: installed.error.code, message: installed.error.message } : null)).toBe(true);
    expect(installed._unsafeUnwrap().plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual([['dig', 'write']]);
    expect(await readdir(join(dir, 'staging'))).toEqual([]);
  });
});
