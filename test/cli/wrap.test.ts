/**
 * `wrap npm:<spec>` prints the manifest generated from the server's own
 * tools/list (risk classes from its annotations, marked needs_review), and
 * `install npm:<spec> --manifest <file> --arg …` installs the server with the
 * reviewed file; both as real CLI subprocesses.
 */
import { access, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packGreeterServer, packServer, TOKEN_SERVER } from '../npm/npmPack.js';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';
import { cli, json, onTerminal, tempDir } from './cliHarness.js';

const SLOW = 120_000;

describe('wrap', () => {
  it('prints a needs_review manifest from the tool list, which install --manifest then uses', { timeout: SLOW }, async () => {
    const work = await tempDir('cli-wrap-');
    try {
      const marker = join(work.path, 'scripts-ran');
      const tarball = await packGreeterServer(work.path, marker);
      const profile = join(work.path, 'profile');

      const wrapped = await cli(['wrap', `npm:${tarball}`, '--profile-dir', profile]);
      expect(wrapped.code, wrapped.stderr).toBe(0);
      expect(wrapped.stderr).toContain('needs review');
      const manifest = JSON.parse(wrapped.stdout) as { plugin_id: string; risk: string; executable: string; advertised_tools: { name: string; risk_class: string }[] };
      expect(manifest).toMatchObject({ plugin_id: 'greeter-npm', executable: 'bin/greeter.mjs', namespace_owner: 'npm:greeter-npm' });
      expect(manifest.risk).toMatch(/^needs_review:/);
      expect(manifest.advertised_tools.map((t) => [t.name, t.risk_class])).toEqual([
        ['greet', 'write'],
        ['forget', 'destructive'],
        ['remember', 'destructive'],
        ['purge', 'destructive'],
      ]);
      const asJson = json(await cli(['wrap', `npm:${tarball}`, '--profile-dir', profile, '--json']));
      expect(asJson).toMatchObject({ ok: true, origin: 'introspection', needs_review: true, manifest_file: 'manifest.json' });

      // The reviewed manifest: remember is reclassified by a person.
      const reviewed = { ...manifest, risk: 'reviewed', advertised_tools: manifest.advertised_tools.map((t) => (t.name === 'remember' ? { ...t, risk_class: 'read' } : t)) };
      const file = join(work.path, 'reviewed.json');
      await writeFile(file, JSON.stringify(reviewed));
      const installed = await cli(['install', `npm:${tarball}`, '--manifest', file, '--arg', 'x', '--skip-canary', '--profile-dir', profile, '--json']);
      expect(installed.code, installed.stdout).toBe(0);
      const ran = await cli(['run', 'greeter-npm', 'remember', '{"name":"cli"}', '--profile-dir', profile]);
      expect(ran.stdout).toContain('Hello, cli (x)');
      await expect(access(marker)).rejects.toThrow();
    } finally {
      await work.dispose();
    }
  });

  it('passes the --grant-env names to the start of a server that needs a token, for wrap and install', { timeout: SLOW }, async () => {
    const work = await tempDir('cli-wrap-env-');
    try {
      const tarball = await packServer(work.path, { name: 'token-server', source: TOKEN_SERVER });
      const profile = join(work.path, 'profile');
      const token = 'cli-token-7d1e0b';
      const env = { TOKEN: token };

      const refused = await cli(['wrap', `npm:${tarball}`, '--profile-dir', profile], { env });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('--grant-env NAME');
      const wrapped = await cli(['wrap', `npm:${tarball}`, '--grant-env', 'TOKEN', '--profile-dir', profile], { env });
      expect(wrapped.code, wrapped.stderr).toBe(0);
      expect((JSON.parse(wrapped.stdout) as { advertised_tools: { name: string }[] }).advertised_tools.map((t) => t.name)).toEqual(['whoami']);

      const installed = await cli(['install', `npm:${tarball}`, '--grant-env', 'TOKEN', '--skip-canary', '--profile-dir', profile, '--json'], { env });
      expect(installed.code, installed.stdout).toBe(0);
      const ran = await cli(['run', 'token-server', 'whoami', '{}', '--max-risk', 'destructive', '--profile-dir', profile], { env });
      expect(ran.stdout).toContain(`token of ${token.length} characters`);
      expect([refused, wrapped, installed, ran].map((run) => run.stdout + run.stderr).join('')).not.toContain(token);
    } finally {
      await work.dispose();
    }
  });

  it('refuses a source that is not npm:', async () => {
    const run = await cli(['wrap', './somewhere', '--json']);
    expect(run.code).toBe(2);
    expect(JSON.stringify(json(run))).toContain('wrap takes an npm:<name>@<version> or npm:<file>.tgz source');
  });

  it('--grant-network gives the start the network, as install does; on a terminal it is asked for first', { timeout: SLOW }, async () => {
    const work = await tempDir('cli-wrap-net-');
    let connections = 0;
    // The service the server connects to while it starts, as a remote proxy or a database client does.
    const service: Server = createServer((socket) => {
      connections++;
      socket.end();
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    try {
      const port = String((service.address() as AddressInfo).port);
      const tarball = await packServer(work.path, { name: 'connecting-server', source: CONNECTING_SERVER });
      const profile = join(work.path, 'profile');
      const base = ['wrap', `npm:${tarball}`, `--arg=${port}`, '--profile-dir', profile];

      const offline = await cli([...base, '--json']);
      expect(offline.code).not.toBe(0);
      expect(JSON.stringify(json(offline))).toContain('--grant-network');
      expect(connections).toBe(0);

      const declined = await onTerminal([...base, '--grant-network'], /list its tools\? \[y\/N\]/, 'n');
      expect(declined.stdout).toContain('PLUGIN_TRUST_DECLINED');
      expect(connections).toBe(0);

      const networked = await cli([...base, '--grant-network']);
      expect(networked.code, networked.stderr).toBe(0);
      expect((JSON.parse(networked.stdout) as { advertised_tools: { name: string }[] }).advertised_tools.map((t) => t.name)).toEqual(['reached']);
      expect(connections).toBe(1);

      // A destination list is checked as an install's grant is, before npm runs.
      const malformed = await cli([...base, '--grant-egress', 'not a host', '--json']);
      expect(malformed.code).not.toBe(0);
      expect(json(malformed)).toMatchObject({ ok: false, error: { code: 'PLUGIN_EGRESS_DESTINATION_INVALID' } });
      expect(connections).toBe(1);
    } finally {
      service.close();
      await work.dispose();
    }
  });
});

// Connects to 127.0.0.1:<its first argument> before it answers anything; lists one tool once connected.
const CONNECTING_SERVER = stdioMcpServerSource({
  name: 'connecting',
  tools: [{ name: 'reached', inputSchema: { type: 'object' } }],
  imports: ["import { connect } from 'node:net';"],
  prelude: `await new Promise((connected) => {
  connect(Number(process.argv[2]), '127.0.0.1')
    .on('error', (error) => {
      process.stderr.write('Connection error: ' + error.message + '\\n');
      process.exit(1);
    })
    .on('connect', connected);
});`,
});
