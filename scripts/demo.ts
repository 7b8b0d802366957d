/**
 * `npm run demo`: the library's main job, end to end, on a throwaway profile.
 * Packages the hello fixture (a Node MCP server on the official SDK), installs
 * it (manifest validated, executable pinned, one catalog transaction), reopens
 * the host (the contract's restart semantics), calls it inside the OS sandbox,
 * shows a plugin-local error mapped to a stable host code, prints the inventory,
 * and shows a tampered executable being refused. Then installs a published
 * MCP server as it is (`npm:@modelcontextprotocol/server-memory`, fetched by
 * npm with its dependencies, no install script run, no manifest given: its
 * tools are read in a sandboxed start) and calls it in the sandbox.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { packageFixturePlugin } from '../fixtures/packagePlugin.js';
import { PluginHost, type HostError } from '../src/index.js';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);
const fail = (what: string, e: HostError): never => {
  say(`✗ ${what}: ${e.code}: ${e.message}\n  hint: ${e.hint}`);
  process.exit(1);
};

/** Whether `program` is an executable file in a directory of PATH, as the host looks for bwrap. */
function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The demo runs plugins in the real sandbox, so a fresh machine needs
 * bubblewrap first, as .ci/run installs it. As root (containers, CI) with
 * apt-get it is installed here; otherwise the demo stops with the command to run.
 */
function ensureBubblewrap(): void {
  if (process.platform !== 'linux' || onPath('bwrap')) return;
  const isRoot = process.getuid?.() === 0;
  if (isRoot && onPath('apt-get')) {
    say('bubblewrap (bwrap) is missing; installing it: apt-get install -y bubblewrap');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    for (const args of [['update', '-qq'], ['install', '-y', '-qq', 'bubblewrap']]) {
      if (spawnSync('apt-get', args, { stdio: 'inherit', env }).status !== 0) {
        say(`✗ apt-get ${args.join(' ')} failed; install bubblewrap and run npm run demo again`);
        process.exit(1);
      }
    }
    if (onPath('bwrap')) return;
  }
  say('✗ the demo runs plugins in the OS sandbox, and bubblewrap (bwrap) is not installed. Install it, then run npm run demo again:');
  say(onPath('apt-get') ? '  sudo apt-get install -y bubblewrap' : onPath('dnf') ? '  sudo dnf install -y bubblewrap' : '  (your package manager) install bubblewrap');
  process.exit(1);
}

ensureBubblewrap();
const profileDir = await mkdtemp(join(tmpdir(), 'mcp-plugin-host-demo-'));
const pkg = await packageFixturePlugin(new URL('../fixtures/plugins/hello', import.meta.url).pathname, { bundle: ['bin/hello-mcp.mjs'] });
try {
  say(`profile: ${profileDir}`);
  const first = await PluginHost.open({ profileDir, profileKind: 'dev' });
  if (first.isErr()) fail('open', first.error);
  const host1 = first._unsafeUnwrap();

  const installed = await host1.install(pkg);
  if (installed.isErr()) fail('install', installed.error);
  const plugin = installed._unsafeUnwrap().plugin;
  say(`✓ installed ${plugin.name} ${plugin.version} (${plugin.shape}), executable sha256 ${plugin.executable.sha256.slice(0, 16)}…, status ${plugin.status}`);
  await host1.close();

  const second = await PluginHost.open({ profileDir, profileKind: 'dev' });
  if (second.isErr()) fail('reopen', second.error);
  const host = second._unsafeUnwrap();
  host.events.on('spawn', (e) => say(`  · spawned pid ${e.pid} (${e.sandboxed ? 'sandboxed' : 'NOT sandboxed'})`));

  const info = (await host.info('hello'))._unsafeUnwrap();
  const policy = info.enforced_capabilities;
  say(`✓ reopened; hello is ${info.status}; sandbox: ${policy?.backend}, network ${policy?.network ? 'on' : 'off'}, writable ${policy?.writablePaths.join(', ')}`);

  const ok = await host.call('plug.hello.hello', { name: 'world' });
  if (ok.isErr()) fail('call', ok.error);
  say(`✓ plug.hello.hello {"name":"world"} → ${JSON.stringify(ok._unsafeUnwrap().value)}`);

  const bad = await host.call('plug.hello.hello', { name: '' });
  if (bad.isOk()) {
    say('✗ an empty name should have failed');
    process.exit(1);
  }
  say(`✓ plug.hello.hello {"name":""} → ${bad.error.code} (plugin said ${bad.error.source_error_code}), retryable ${bad.error.retryable}`);

  say('\ninventory:');
  for (const row of (await host.list())._unsafeUnwrap()) {
    say(`  ${row.name.padEnd(10)} ${row.version.padEnd(8)} ${row.shape.padEnd(12)} ${row.status.padEnd(10)} ${row.variant_count} operation(s)`);
  }

  await host.close();

  await appendFile(join(info.executable.install_root, info.executable.path), '// tampered after install\n');
  const third = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  const tampered = await third.call('plug.hello.hello', { name: 'world' });
  say(`\n✓ after tampering with the installed executable: ${tampered.isErr() ? `${tampered.error.code} (${String(tampered.error.details.reason)})` : 'NOT refused'}`);
  say(`  status now: ${(await third.info('hello'))._unsafeUnwrap().status}`);
  await third.close();

  // The version this repository's tests run, so the demo installs a release known to work.
  const devDependencies = (JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
  const published = `npm:@modelcontextprotocol/server-memory@${devDependencies['@modelcontextprotocol/server-memory']!.replace(/^[\^~]/, '')}`;
  say(`\npublished server, as it is: ${published}`);
  const fourth = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  const fetched = await fourth.install(published, { canary: false });
  if (fetched.isErr()) fail(`install ${published}`, fetched.error);
  const server = fetched._unsafeUnwrap().plugin;
  say(`✓ installed ${server.name} ${server.version} from npm with its dependencies, every file pinned; ${server.operations.length} tools read from a sandboxed start`);
  say(`  not reviewed yet (risk: ${(server.risk ?? '').split(' ')[0] ?? ''} …), so every tool counts as write at least`);
  await fourth.close();
  const fifth = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  const readGraph = server.operations.find((o) => o.tool_name === 'read_graph')?.op_id ?? 'read_graph (not advertised)';
  // Until a person reviews the generated manifest (wrap, then install --manifest), the caller must accept write risk.
  const graph = await fifth.call(readGraph, {}, { maxRisk: 'write' });
  if (graph.isErr()) fail(`call ${readGraph}`, graph.error);
  say(`✓ ${readGraph} {} (maxRisk write) → ${JSON.stringify(graph._unsafeUnwrap().value)}`);
  await fifth.close();
} finally {
  await rm(profileDir, { recursive: true, force: true });
  await rm(pkg, { recursive: true, force: true });
}
