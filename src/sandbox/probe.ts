import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { ExitInfo, PluginProcess } from '../process/PluginProcess.js';
import { unverifiedCommand } from '../process/spawnPluginProcess.js';
import { spawnChild } from '../process/spawnChild.js';
import { nodeRuntimePaths, withScopeLauncher, type SandboxBackend } from './backends.js';
import { currentCgroupSystem, discoverGroupTree, type CgroupSystem, type GroupTree } from './controlGroups.js';
import { resolveLayout } from './SandboxLayout.js';
import { DEFAULT_TREE_LIMITS, joinGroupLaunch } from './treeLimits.js';

/** Why a host cannot enforce a sandbox, as reported in `details.cause` of PLUGIN_SANDBOX_UNSUPPORTED. */
export type SandboxUnsupportedCause =
  | 'platform_unsupported'
  | 'architecture_unsupported'
  | 'bubblewrap_missing'
  | 'launcher_unusable'
  | 'sandbox_exec_missing'
  | 'user_namespaces_disabled'
  | 'enforcement_not_proved'
  | 'probe_failed'
  | 'tree_limits_unavailable'
  | 'egress_unavailable';

/** Builds PLUGIN_SANDBOX_UNSUPPORTED with a cause and a hint that names it. */
export function sandboxUnsupported(cause: SandboxUnsupportedCause, message: string, hint: string, details: Record<string, unknown> = {}): HostError {
  return hostError('PLUGIN_SANDBOX_UNSUPPORTED', message, { hint, details: { cause, ...details } });
}

/** What the probe script reports: for each attempt, `written`/`connected`/`read` or the error code, and the process ids it sees. */
interface ProbeReport {
  readonly outside: string;
  readonly inside: string;
  readonly tcp: string;
  readonly unix: string;
  readonly secret: string;
  readonly unlisted: string;
  readonly pids: readonly number[];
}

// Runs inside the sandbox with the host's own Node: it is the host's probe, not a plugin.
const PROBE_SCRIPT = `
const fs = require('fs'), net = require('net');
const [outside, inside, port, sock, secret, unlisted, nonce] = process.argv.slice(1);
const attempt = (f) => { try { f(); return 'written'; } catch (e) { return e.code || String(e); } };
const read = (p) => { try { return fs.readFileSync(p, 'utf8').includes('probe-secret') ? 'read' : 'masked'; } catch (e) { return e.code || String(e); } };
const pids = () => { try { return fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n)).map(Number); } catch { return []; } };
const connect = (o) => new Promise((done) => {
  const s = net.connect(o);
  s.setTimeout(3000);
  s.on('connect', () => { s.end(nonce); done('connected'); });
  s.on('error', (e) => done(e.code || String(e)));
  s.on('timeout', () => { s.destroy(); done('timeout'); });
});
(async () => {
  const r = { outside: attempt(() => fs.writeFileSync(outside, 'x')), inside: attempt(() => fs.writeFileSync(inside, 'x')) };
  r.tcp = await connect({ host: '127.0.0.1', port: Number(port) });
  r.unix = await connect({ path: sock });
  r.secret = read(secret);
  r.unlisted = read(unlisted);
  r.pids = pids();
  process.stdout.write(JSON.stringify(r));
})();
`;

const PROBE_TIMEOUT_MS = 20_000;

const UNLISTED_PARENT = '/var/tmp';

const USERNS_FAILURE = /uid map|gid map|user namespace|new namespace|unshare|clone|No permissions to creat/i;

const USERNS_HINT =
  'bubblewrap could not create its namespaces: enable unprivileged user namespaces ' +
  '(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 on Debian kernels, ' +
  'or on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap), ' +
  'or run the host outside a container that forbids them.';

function listen(server: Server, options: { host: string; port: number } | { path: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => resolve());
  });
}

/**
 * What a probe child printed: the JSON report it writes on stdout at its end
 * (`undefined` when its output is none, or not JSON), and how it exited. A
 * child still running after PROBE_TIMEOUT_MS is stopped. The sandbox probe
 * and the egress probe (egressProbe.ts) read their children so.
 */
export async function probeReport<T>(child: PluginProcess): Promise<{ readonly report: T | undefined; readonly exit: ExitInfo }> {
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  const timer = setTimeout(() => void child.stop({ stdinGraceMs: 0, termGraceMs: 1_000 }), PROBE_TIMEOUT_MS);
  const exit = await child.exited;
  clearTimeout(timer);
  try {
    return { report: JSON.parse(Buffer.concat(chunks).toString('utf8')) as T, exit };
  } catch {
    return { report: undefined, exit };
  }
}

/**
 * A listener that counts the connections of this probe: those that send its
 * `nonce`. Any process of the host's network can reach a loopback listener,
 * and a networked plugin reads its port in `/proc/net/tcp`: counting every
 * connection let a plugin already running (under another host process) fail
 * the probe of a host starting up, so that it refused to run plugins, or
 * under `backend: 'auto'` fell back from the launcher to bubblewrap.
 */
export function countingServer(nonce: string): { server: Server; connections: () => number } {
  let count = 0;
  const server = createServer((socket) => {
    let received = '';
    socket.setTimeout(PROBE_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes(nonce)) {
        count++;
        socket.destroy();
      } else if (received.length > nonce.length * 4) socket.destroy();
    });
    socket.on('end', () => socket.destroy());
  });
  return { server, connections: () => count };
}

function classifyFailure(backend: SandboxBackend, stderr: string, description: string): HostError {
  const detail = stderr.trim().split('\n').slice(-5).join('\n');
  if (backend.name === 'bubblewrap' && USERNS_FAILURE.test(detail)) {
    return sandboxUnsupported('user_namespaces_disabled', `The bubblewrap sandbox cannot start on this host: ${detail}`, USERNS_HINT, { stderr: detail });
  }
  return sandboxUnsupported(
    'probe_failed',
    `The ${backend.name} sandbox probe did not run (${description})${detail ? `: ${detail}` : ''}`,
    `Run ${backend.command} by hand to see why it fails on this host.`,
    { stderr: detail, exit: description },
  );
}

async function runProbe(backend: SandboxBackend): Promise<Result<void, HostError>> {
  const base = mkdtempSync(join(tmpdir(), 'mcp-sandbox-probe-'));
  // A directory the layout never names, away from the temporary directory that holds the layout's own: the plugin
  // must not read it, as it must not read a host secret.
  const unlistedBase = mkdtempSync(join(existsSync(UNLISTED_PARENT) ? UNLISTED_PARENT : tmpdir(), 'mcp-sandbox-probe-unlisted-'));
  const nonce = randomBytes(16).toString('hex');
  const tcp = countingServer(nonce);
  const unix = countingServer(nonce);
  try {
    for (const dir of ['install', 'allowed', 'outside']) mkdirSync(join(base, dir));
    const outsideFile = join(base, 'outside', 'written');
    const insideFile = join(base, 'allowed', 'written');
    const socketPath = join(base, 'allowed', 'probe.sock');
    const secretFile = join(base, 'outside', 'secret');
    const unlistedFile = join(unlistedBase, 'secret');
    for (const file of [secretFile, unlistedFile]) writeFileSync(file, 'probe-secret', { mode: 0o644 });
    await listen(tcp.server, { host: '127.0.0.1', port: 0 });
    await listen(unix.server, { path: socketPath });
    const address = tcp.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;

    const layout = resolveLayout({
      network: false,
      installRoot: join(base, 'install'),
      writeDir: join(base, 'allowed'),
      // The outside directory is visible, so a failed write proves confinement rather than absence.
      readOnlyPaths: [base, ...nodeRuntimePaths()],
      hiddenPaths: [],
      secretPaths: [secretFile],
      systemPaths: backend.systemPaths,
    });
    if (layout.isErr()) return err(layout.error);
    const scoping = withScopeLauncher(backend, unverifiedCommand([process.execPath, '-e', PROBE_SCRIPT, outsideFile, insideFile, String(port), socketPath, secretFile, unlistedFile, nonce], layout.value.installRoot));
    if (scoping.isErr()) return err(sandboxUnsupported(LAUNCHER_MISSING[backend.name].cause, `The ${backend.name} sandbox cannot be started: ${scoping.error}`, LAUNCHER_MISSING[backend.name].hint));
    // Proved as plugins run: under bubblewrap, through the launcher's scope-only mode where the kernel has the scopes.
    const { executable, scopeFd } = scoping.value;
    const { args, extraInput } = backend.launch(layout.value, executable.argv, 3 + executable.inheritFds.length, undefined, undefined, scopeFd);
    const spawned = await spawnChild(
      executable,
      { command: backend.command, args, env: {}, cwd: '/', ...(extraInput ? { extraInput } : {}) },
      { tree: backend.tree, launcherFailure: backend.launcherFailure, stdinGraceMs: 0, termGraceMs: 1_000 },
    );
    if (spawned.isErr()) {
      return err(sandboxUnsupported(LAUNCHER_MISSING[backend.name].cause, `The ${backend.name} launcher cannot be started: ${spawned.error.message}`, LAUNCHER_MISSING[backend.name].hint));
    }
    const child = spawned.value;
    const { report, exit } = await probeReport<ProbeReport>(child);
    if (report === undefined) return err(classifyFailure(backend, child.stderrTail(), exit.description));
    const escaped: string[] = [];
    if (report.outside === 'written' || existsSync(outsideFile)) escaped.push('a write outside the writable directory succeeded');
    if (report.tcp === 'connected' || tcp.connections() > 0) escaped.push('a TCP connection to a host loopback listener succeeded');
    if (report.unix === 'connected' || unix.connections() > 0) escaped.push('a connection to a host Unix socket succeeded');
    if (report.secret === 'read') escaped.push('a hidden secret file was read');
    if (report.unlisted === 'read') escaped.push('a file outside every granted path was read');
    // Its own PID space: the host's own process is not there, and only the few processes of the sandbox are.
    if (!Array.isArray(report.pids) || report.pids.includes(process.pid) || report.pids.length > 8) escaped.push('the host\'s processes are visible');
    if (escaped.length > 0) {
      return err(
        sandboxUnsupported('enforcement_not_proved', `The ${backend.name} sandbox does not enforce its policy on this host: ${escaped.join('; ')}.`, 'Refusing to run plugins unconfined; check the kernel and launcher version.', { report }),
      );
    }
    if (report.inside !== 'written' || !existsSync(insideFile)) {
      return err(sandboxUnsupported('probe_failed', `The ${backend.name} sandbox blocked writes to the allowed directory too (${report.inside}).`, 'Check that the host temporary directory is writable and not mounted noexec or read-only.', { report }));
    }
    return ok(undefined);
  } catch (cause) {
    return err(sandboxUnsupported('probe_failed', `The sandbox probe could not be set up: ${(cause as Error).message}`, 'Check that the host temporary directory is writable.'));
  } finally {
    tcp.server.close();
    unix.server.close();
    rmSync(base, { recursive: true, force: true });
    rmSync(unlistedBase, { recursive: true, force: true });
  }
}

/** What to install when a backend's launcher does not start. */
const LAUNCHER_MISSING: Readonly<Record<SandboxBackend['name'], { cause: SandboxUnsupportedCause; hint: string }>> = {
  bubblewrap: { cause: 'bubblewrap_missing', hint: 'Install bubblewrap (Debian/Ubuntu package "bubblewrap") or pass its path.' },
  landlock: { cause: 'launcher_unusable', hint: 'Rebuild the launcher (`npm run build`, with gcc and libc6-dev) or pass launcherPath.' },
  seatbelt: { cause: 'sandbox_exec_missing', hint: 'Install nothing: sandbox-exec ships with macOS; pass its path.' },
};

const probes = new Map<string, Promise<Result<void, HostError>>>();

/**
 * Proves, once per launcher per process, that the backend really confines:
 * inside a sandbox with `network: false` a write outside the writable
 * directory, a TCP connection to a listener on the host's loopback, a
 * connection to a host Unix socket, reading a hidden secret inside a
 * visible directory and reading a file in a directory the layout never
 * names must all fail, and the host's process must not be in the sandbox's
 * PID space, while a write inside succeeds. Never trusts the mere presence
 * of the launcher.
 */
export function probeSandbox(backend: SandboxBackend): Promise<Result<void, HostError>> {
  const key = `${backend.name}:${backend.command}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runProbe(backend);
    probes.set(key, probe);
  }
  return probe;
}

/** Whether control groups can cap plugin trees here: the tree to create them in, or why not. */
export type TreeLimitSupport = { readonly tree: GroupTree } | { readonly tree: undefined; readonly cause: string };

function hostAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `sh -c script` inside the group of `joinFiles` through the same join step plugin launches use. */
function runJoined(joinFiles: readonly string[], script: string): Promise<number | null> {
  const launch = joinGroupLaunch(joinFiles, '/bin/sh', ['-c', script]);
  return new Promise((resolve) => {
    const child = spawn(launch.command, launch.args, { stdio: 'ignore', env: {} });
    child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
}

async function runTreeLimitProbe(system: CgroupSystem): Promise<TreeLimitSupport> {
  const found = discoverGroupTree(system);
  if (found.isErr()) return { tree: undefined, cause: found.error };
  const tree = found.value;
  tree.collectStale(hostAlive);
  // One task allowed: the shell itself. Its first fork must be refused and counted, which proves the whole chain.
  const group = tree.create({ memoryBytes: 64 * 2 ** 20, maxProcesses: 1 });
  if (group.isErr()) return { tree: undefined, cause: `${tree.mechanism}: ${group.error}` };
  try {
    const status = await runJoined(group.value.joinFiles, '/bin/true; /bin/true');
    const hit = group.value.limitHit();
    if (status === 125) return { tree: undefined, cause: `${tree.mechanism}: a process cannot join a group the host created` };
    if (hit?.limit !== 'processes') return { tree: undefined, cause: `${tree.mechanism}: a group's process cap was not enforced (a fork past it was not refused)` };
    return { tree: withCpuProved(tree) };
  } finally {
    group.value.remove();
  }
}

/**
 * `tree`, or the same without the cpu controller when a weighed group cannot
 * be made there (a cpu hierarchy mounted but not writable by the host, say):
 * plugins then run unweighed rather than not at all.
 */
function withCpuProved(tree: GroupTree): GroupTree {
  if (tree.cpuUnavailable !== undefined) return tree;
  const weighed = tree.create({ memoryBytes: null, maxProcesses: null, cpuWeight: DEFAULT_TREE_LIMITS.cpuWeight });
  if (weighed.isErr()) return tree.withoutCpu(weighed.error);
  weighed.value.remove();
  return tree;
}

const treeProbes = new Map<string, Promise<TreeLimitSupport>>();

/**
 * Finds, once per host process, where plugin groups can be created and
 * proves they cap a tree: a probe process joins a fresh group whose task
 * cap is one, and its first fork must be refused and counted by the kernel.
 * Collects the empty groups of hosts that died (a dead pid in the group's
 * name) on the way. `system` replaces the host's own view in tests.
 */
export function probeTreeLimits(system: CgroupSystem = currentCgroupSystem()): Promise<TreeLimitSupport> {
  const key = `${system.hostPid}:${system.procSelfCgroup}`;
  let probe = treeProbes.get(key);
  if (probe === undefined) {
    probe = runTreeLimitProbe(system);
    treeProbes.set(key, probe);
  }
  return probe;
}
