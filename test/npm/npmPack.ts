/**
 * A dependency-free MCP stdio server packed with `npm pack` (scripts off),
 * whose install scripts would append to a marker file if anything ran them.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';

/** The server's source: `greet` claims readOnlyHint, `purge` claims both readOnlyHint and destructiveHint. */
export const GREETER_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const tools = [
  { name: 'greet', description: 'Greets', inputSchema: { type: 'object', properties: { name: { type: 'string' } } }, annotations: { readOnlyHint: true } },
  { name: 'forget', description: 'Forgets everyone', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: 'remember', description: 'Remembers a name', inputSchema: { type: 'object' } },
  { name: 'purge', description: 'Purges everything', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true, destructiveHint: true } },
];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
// --banner: a line on stdout that is not JSON-RPC, as servers that log to stdout print.
if (process.argv.includes('--banner')) process.stdout.write('greeter-npm starting\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  let message;
  try { message = JSON.parse(line); } catch { return; }
  if (message.id === undefined) return;
  const { id, method, params } = message;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'greeter-npm', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'Hello, ' + String(params.arguments?.name) + ' (' + process.argv.slice(2).join(',') + ')' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

/** Packs the server into `<dir>/greeter-npm-1.0.0.tgz`; its scripts would append to `marker`. */
export async function packGreeterServer(dir: string, marker: string): Promise<string> {
  const pkg = join(dir, 'greeter-npm');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'greeter.mjs'), GREETER_SERVER, { mode: 0o755 });
  const writeMarker = (stage: string): string => `node -e "require('fs').appendFileSync('${marker}', '${stage} ')"`;
  await writeFile(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'greeter-npm',
      version: '1.0.0',
      type: 'module',
      bin: { 'greeter-npm': 'bin/greeter.mjs' },
      scripts: { preinstall: writeMarker('preinstall'), install: writeMarker('install'), postinstall: writeMarker('postinstall') },
    }),
  );
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'greeter-npm-1.0.0.tgz');
}

/** A package to pack: its name, the server's source at bin/server.mjs, and its scripts. */
export interface PackedServer {
  readonly name: string;
  readonly source: string;
  readonly scripts?: Readonly<Record<string, string>>;
  /** Registry packages it declares as peers, name to range. */
  readonly peerDependencies?: Readonly<Record<string, string>>;
}

/** Packs `server` with `npm pack` (scripts off) into `dir`; returns the tarball's path. */
export async function packServer(dir: string, server: PackedServer): Promise<string> {
  const pkg = join(dir, server.name.replace(/[@/]/g, '_'));
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), server.source, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: server.name, version: '1.0.0', type: 'module', bin: 'bin/server.mjs', scripts: server.scripts ?? {}, ...(server.peerDependencies === undefined ? {} : { peerDependencies: server.peerDependencies }) }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${server.name.replace(/^@/, '').replace('/', '-')}-1.0.0.tgz`);
}

/**
 * A server that needs a token to start, as @modelcontextprotocol/server-slack does: exits 1 without TOKEN, exits 2
 * when NODE_OPTIONS, LD_PRELOAD or UNGRANTED_SECRET reached it, and with `--fail` prints its token and exits 1.
 * Its one tool, `whoami`, answers with the token's length.
 */
export const TOKEN_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
if (process.env.TOKEN === undefined) { process.stderr.write('TOKEN is not set\\n'); process.exit(1); }
const leaked = ['NODE_OPTIONS', 'LD_PRELOAD', 'UNGRANTED_SECRET'].filter((name) => process.env[name] !== undefined);
if (leaked.length > 0) { process.stderr.write('reached: ' + leaked.join(',') + '\\n'); process.exit(2); }
if (process.argv.includes('--fail')) { process.stderr.write('starting with token ' + process.env.TOKEN + ', then failing\\n'); process.exit(1); }
if (process.argv.includes('--fail-after-noise')) {
  // Exactly 64 KiB after the token's fourth character: the stderr tail begins inside the token.
  const token = process.env.TOKEN;
  const newest = 'config ' + JSON.stringify({ token }) + '\\nurl https://example.com/?t=' + encodeURIComponent(token) + '\\nthen failing\\n';
  const noise = 64 * 1024 - Buffer.byteLength(token.slice(4) + '\\n') - Buffer.byteLength(newest);
  process.stderr.write('starting with token ' + token + '\\n' + 'n'.repeat(noise - 1) + '\\n' + newest);
  process.exit(1);
}
if (process.argv.includes('--fail-one-line')) {
  // One line, the token's end first in its newest 64 KiB.
  process.stderr.write('starting with token ' + process.env.TOKEN + 'n'.repeat(64 * 1024 - Buffer.byteLength(process.env.TOKEN.slice(4))));
  process.exit(1);
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'token-server', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'token of ' + process.env.TOKEN.length + ' characters' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;
