/**
 * A server whose package declares a Node it was not started with
 * (`engines.node` in its package.json), as the fourth round of published
 * servers found: @bytebase/dbhub (`>=22.5.0`) dies on Node 20 with "No such
 * built-in module: node:sqlite", and nothing in the failure said that its
 * package asked for another Node. A failed introspection now names the range
 * and the Node it ran on (`details.engines`); a server that starts installs
 * whatever it declares (npm only warns about engines, and so does the host);
 * a range that includes the Node says nothing. The packages are packed
 * locally with `npm pack`; the second Node is the suite's Node 22.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { NODE_22, nodeBinDir } from '../support/otherNode.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// Imports a built-in module that only some Node versions have (`node:sqlite` arrived in 22.5, `node:sys` never leaves), then serves one tool.
const serverSource = (builtin: string): string => `#!/usr/bin/env node
import '${builtin}';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'engines', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'ping', inputSchema: { type: 'object' } }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packWithEngines(dir: string, name: string, engines: Record<string, string>, builtin: string): Promise<string> {
  const pkg = join(dir, name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), serverSource(builtin), { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', bin: 'bin/server.mjs', engines }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-1.0.0.tgz`);
}

describe('npm: a server started on a Node its engines.node leaves out', { timeout: 120_000 }, () => {
  it('says which Node the package asks for and which one it ran on when its start fails (the host Node)', async () => {
    const work = await pool.profile();
    const tarball = await packWithEngines(work, 'needs-sqlite', { node: '>=99.0.0' }, 'node:no-such-builtin');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({
      code: 'PLUGIN_HANDSHAKE_FAILED',
      details: { reason: 'introspection', exit: 'exited with status 1', engines: { node: '>=99.0.0', interpreter: '/usr/bin/node', interpreter_version: process.versions.node } },
    });
    expect(String(error.details['stderr_tail'])).toContain('node:no-such-builtin');
    expect(error.hint).toMatch(new RegExp(`^The package declares engines\\.node ">=99\\.0\\.0" and its server ran on Node ${process.versions.node.replaceAll('.', '\\.')} \\(/usr/bin/node\\)`));
    expect(error.hint).toContain('interpreterSearchPath');
    // wrap starts it the same way and says the same.
    const wrapped = (await host.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(wrapped.details['engines']).toEqual(error.details['engines']);
  });

  it('asks the interpreter the server ran on, not the host, for its version (Node 22 on the search path)', async () => {
    const node22 = await nodeBinDir();
    const work = await pool.profile();
    const tarball = await packWithEngines(work, 'old-node-only', { node: '^20.0.0' }, 'node:no-such-builtin');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: `${node22}:/usr/bin:/bin` });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error.details['engines']).toMatchObject({ node: '^20.0.0', interpreter_version: NODE_22 });
    expect(error.hint).toContain(`ran on Node ${NODE_22}`);
  });

  it('says nothing of engines when the range includes the Node it ran on, and never refuses a server that starts', async () => {
    const work = await pool.profile();
    const failing = await packWithEngines(work, 'fails-anyway', { node: `>=${process.versions.node.split('.')[0]}` }, 'node:no-such-builtin');
    const starts = await packWithEngines(work, 'starts-anyway', { node: '>=99.0.0' }, 'node:fs');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install(`npm:${failing}`, { canary: false }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(error.details['engines']).toBeUndefined();
    expect(error.hint).not.toContain('engines.node');
    const installed = (await host.install(`npm:${starts}`, { canary: false }))._unsafeUnwrap();
    expect(installed.plugin.operations.map((o) => o.tool_name)).toEqual(['ping']);
  });
});
