/**
 * An npm package whose `#!/usr/bin/env node` finds, on the host's
 * interpreter search path, a Node that is not the host's own: the install
 * reads its version (to pick how its main module is checked) by running it,
 * and until review R6 N2 ran it on the host, outside every sandbox, as the
 * host's user. Here that `node` is a native program that leaves a mark
 * wherever it runs and otherwise behaves as the host's Node; after the whole
 * install (the version probe, the introspection start), no mark is on the
 * host, and the version it answered in the sandbox picked the method.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { nodeMainLoadingFor } from '../../src/binding/nodeMain.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { markingNode } from '../binding/helpers/markingNode.js';
import { answered, HostPool } from '../support/hostHarness.js';
import { LINUX_BACKENDS } from '../sandbox/sandboxBackends.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probed', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'ping', inputSchema: { type: 'object' } }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function pack(dir: string): Promise<string> {
  const pkg = join(dir, 'probed-interpreter');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), SERVER, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'probed-interpreter', version: '1.0.0', type: 'module', bin: 'bin/server.mjs' }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'probed-interpreter-1.0.0.tgz');
}

describe.each(LINUX_BACKENDS)('npm: the Node a package\'s #! line finds on the search path (%s)', (backend) => {
  it('is asked its version only inside the sandbox: no mark on the host after the install', { timeout: 180_000 }, async () => {
    const work = await pool.profile();
    const mark = join(work, 'ran-on-the-host');
    const node = await markingNode(join(work, 'search-path'), mark);
    const tarball = await pack(work);
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: `${dirname(node)}:/usr/bin:/bin`, sandbox: { backend } });
    const installed = answered(await host.install(`npm:${tarball}`, { canary: false }));
    expect(existsSync(mark)).toBe(false);
    expect(installed.plugin.operations.map((o) => o.tool_name)).toEqual(['ping']);
    // The program answered as the host's Node does, from inside the sandbox; unasked, it would have the loader hook.
    const lock = JSON.parse(await readFile(join(host.profileDir, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { binding: { interpreter?: unknown } }> };
    expect(lock.plugins[installed.plugin.name]?.binding.interpreter).toMatchObject({ path: node, kind: 'node', node_main: nodeMainLoadingFor(process.version) });
  });
});
