import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { findLauncher, launcherCandidates, launcherProblem } from '../../src/sandbox/launcherBinary.js';
import { pluginSeccompFilter } from '../../src/sandbox/seccompFilter.js';
import { SandboxSpawner, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';
import { firstJsonLine } from '../support/processes.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';
import { unixServer } from './servers.js';

// The attack review of the Landlock backend, each attack run on both Linux backends where it applies. Landlock governs
// opening, creating and removing files, not stat, connect() on a Unix socket file nor a file's metadata (mode, times),
// so whatever the launcher leaves visible must be as unreachable as bubblewrap leaves it; then the programs the host
// runs as itself (the launcher, bwrap) and the launcher's own guards (user ids, a host already gone).
const base = mkdtempSync(join(tmpdir(), 'sandbox-attack-'));
const installRoot = join(base, 'plugins', 'attacker');
const dataDir = join(base, 'data', 'attacker');
const attacker = join(installRoot, 'attacker.mjs');
// Host files outside every tree of the plugin: in a directory no tree lies in, in a system directory, among the devices.
const hostFiles = ['/var/tmp', '/etc', '/dev'].map((dir) => join(dir, `mcp-attack-${process.pid}.txt`));
// A top-level directory of the host's own, there before the host's first spawn.
const hostTopDir = `/mcp-attack-${process.pid}-host`;
const started: PluginProcess[] = [];

// Each action is `name:path`; the report maps it to 'ok' (for a read, the file's text) or the error code.
const ATTACKER = `
import { chmodSync, closeSync, constants, openSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
const attempt = (action, path) => {
  if (action === 'chmod') return Promise.resolve().then(() => chmodSync(path, 0o666));
  if (action === 'utimes') return Promise.resolve().then(() => utimesSync(path, 0, 0));
  if (action === 'stat') return Promise.resolve().then(() => statSync(path));
  if (action === 'create') return Promise.resolve().then(() => writeFileSync(path, 'scratch'));
  if (action === 'openw') return Promise.resolve().then(() => closeSync(openSync(path, constants.O_WRONLY)));
  if (action === 'openr') return Promise.resolve().then(() => closeSync(openSync(path, constants.O_RDONLY)));
  if (action === 'read') return Promise.resolve().then(() => readFileSync(path, 'utf8'));
  if (action === 'signal') return Promise.resolve().then(() => { process.kill(Number(path), 0); });
  return new Promise((resolve, reject) => {
    const socket = connect({ path: action === 'abstract' ? '\\0' + path : path });
    socket.on('connect', () => { socket.destroy(); resolve(); });
    socket.on('error', reject);
  });
};
const report = {};
for (const spec of process.argv.slice(2)) {
  const [action, ...rest] = spec.split(':');
  report[spec] = await attempt(action, rest.join(':')).then((value) => (typeof value === 'string' ? value : 'ok'), (e) => e.code ?? String(e));
}
process.stdout.write(JSON.stringify(report) + '\\n');
`;

beforeAll(() => {
  for (const d of [installRoot, dataDir, hostTopDir]) mkdirSync(d, { recursive: true });
  writeFileSync(attacker, ATTACKER);
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  rmSync(hostTopDir, { recursive: true, force: true });
  for (const file of hostFiles) rmSync(file, { force: true });
});

async function attack(spawner: SandboxSpawner, actions: string[], overrides: Partial<SandboxSpawnRequest> = {}): Promise<Record<string, string>> {
  const result = await spawner.spawn({
    executable: unverifiedCommand([process.execPath, attacker, ...actions], installRoot, nodeRuntimePaths()),
    env: {},
    network: false,
    writeDir: dataDir,
    hiddenPaths: [],
    ...overrides,
  });
  if (result.isErr()) throw result.error;
  const p = result.value;
  started.push(p);
  return firstJsonLine<Record<string, string>>(p.stdout).catch(async (e: Error) => {
    await p.exited;
    throw new Error(`${e.message}; stderr: ${p.stderrTail()}`);
  });
}

describe.each(LINUX_BACKENDS)('a plugin attacking the host from its sandbox (real %s)', (backend) => {
  let spawner: SandboxSpawner;
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend }))._unsafeUnwrap();
  });

  // Run by the host's user (here root without an identity, as on any host not switching users), the plugin owns the
  // host's files: Landlock lets it chmod and utime every one its mount namespace shows on a writable mount.
  it('changes no mode or times of a host file outside its trees (another directory, /etc, /dev)', async () => {
    for (const file of hostFiles) {
      writeFileSync(file, 'host file');
      chmodSync(file, 0o600);
      utimesSync(file, 1_000_000, 1_000_000);
    }
    const report = await attack(spawner, hostFiles.flatMap((file) => [`chmod:${file}`, `utimes:${file}`]));
    for (const file of hostFiles) {
      expect(report[`chmod:${file}`], file).not.toBe('ok');
      expect(report[`utimes:${file}`], file).not.toBe('ok');
      const after = statSync(file);
      expect(after.mode & 0o777, file).toBe(0o600);
      expect(after.mtimeMs, file).toBe(1_000_000_000);
    }
  });

  // Landlock does not govern stat: a path left visible tells whether a file exists, its size and times (a key's, a
  // history's), which bubblewrap hides entirely. Names outside every tree must not exist for any plugin, networked or not.
  it('a plugin without network learns nothing of host files outside its trees, not even that they exist', async () => {
    const secret = hostFiles[0]!;
    writeFileSync(secret, 'host secret');
    const report = await attack(spawner, [`stat:${secret}`, `stat:${join(process.cwd(), 'package.json')}`]);
    expect(report).toEqual({ [`stat:${secret}`]: 'ENOENT', [`stat:${join(process.cwd(), 'package.json')}`]: 'ENOENT' });
  });

  // Landlock does not stop connect() on a socket file either: were the host's /dev shown, a syslog daemon's /dev/log
  // (a socket there where no systemd links it into /run) would take a networked plugin's forged log lines.
  it('a networked plugin reaches no host Unix socket in /dev', async () => {
    const socket = join('/dev', `mcp-attack-${process.pid}.sock`);
    rmSync(socket, { force: true });
    const server = await unixServer(socket);
    try {
      const report = await attack(spawner, [`connect:${socket}`], { network: true });
      expect(report[`connect:${socket}`]).not.toBe('ok');
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
      rmSync(socket, { force: true });
    }
  });

  // Masking the sockets found in /dev at spawn misses one in a subdirectory (LXD's /dev/lxd/sock, the host's API) and one
  // made there once the plugin runs; and the host's /dev tells by stat which devices and files the host has.
  it('a networked plugin reaches no socket in a /dev subdirectory and sees none of the host\'s other devices', async () => {
    const dir = join('/dev', `mcp-attack-${process.pid}`);
    const socket = join(dir, 'sock');
    mkdirSync(dir, { recursive: true });
    const server = await unixServer(socket);
    const deviceFile = hostFiles[2]!;
    writeFileSync(deviceFile, 'host file');
    try {
      const report = await attack(spawner, [`connect:${socket}`, `stat:${deviceFile}`, 'stat:/dev/kmsg', 'stat:/dev/null'], { network: true });
      expect(report).toEqual({ [`connect:${socket}`]: 'ENOENT', [`stat:${deviceFile}`]: 'ENOENT', 'stat:/dev/kmsg': 'ENOENT', 'stat:/dev/null': 'ok' });
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Landlock refuses listing and reading /sys but not stat: a guessed name there (another plugin's control group, named
  // from the host's pid and a counter; a device) would tell what the host runs and has. bubblewrap shows no /sys.
  it('a plugin learns nothing from /sys, not even which names exist there', async () => {
    const report = await attack(spawner, ['stat:/sys/fs/cgroup', 'stat:/sys/kernel']);
    expect(report).toEqual({ 'stat:/sys/fs/cgroup': 'ENOENT', 'stat:/sys/kernel': 'ENOENT' });
  });

  // /proc is the sandbox's own, but what a process reads there is relative to its namespaces: without a control group
  // namespace /proc/self/cgroup names the host's groups (the host's pid, the group the host itself runs in).
  it('a plugin learns nothing of the host\'s control groups from /proc/self/cgroup', async () => {
    const report = await attack(spawner, ['read:/proc/self/cgroup']);
    const lines = report['read:/proc/self/cgroup']!.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(/^\d+:[^:]*:\/$/);
  });

  // Covering a directory hides its files but not the host's mounts inside it: /proc/self/mountinfo would list every one
  // (a home on its own device, a USB stick's label under /media, a network share and its server under /mnt, the
  // host's control group hierarchies), as bubblewrap's fresh root does not.
  it.runIf(process.getuid?.() === 0)('a plugin learns nothing of the host\'s mounts from /proc/self/mountinfo', async () => {
    const hostMount = join('/var/tmp', `mcp-attack-${process.pid}-mount`);
    mkdirSync(hostMount, { recursive: true });
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4k', 'mcp-attack-share', hostMount], { encoding: 'utf8' });
    expect(mounted.status, mounted.stderr).toBe(0);
    try {
      const report = await attack(spawner, ['read:/proc/self/mountinfo']);
      const mountPoints = report['read:/proc/self/mountinfo']!.trim().split('\n').map((line) => line.split(' ')[4]!);
      expect(mountPoints).toContain('/proc');
      expect(mountPoints.filter((point) => point.includes(`mcp-attack-${process.pid}`) || point.startsWith('/sys/fs/cgroup'))).toEqual([]);
      // Nor which top-level directories the host has, by a name there (an empty cover would still say it exists).
      expect(await attack(spawner, [`stat:${hostTopDir}`])).toEqual({ [`stat:${hostTopDir}`]: 'ENOENT' });
    } finally {
      spawnSync('umount', [hostMount]);
      rmSync(hostMount, { recursive: true, force: true });
    }
  });

  // The root directory lists names of the host's own (a marker such as /.dockerenv, a swap file) and gains new ones
  // while the host runs (a volume mounted on a directory made at /); each must be absent, a socket there unreachable.
  it.runIf(process.getuid?.() === 0)('a networked plugin finds neither a file at / nor a directory made there after the host started', async () => {
    await attack(spawner, [], { network: true });
    const topFile = `/mcp-attack-${process.pid}.txt`;
    const topDir = `/mcp-attack-${process.pid}`;
    const socket = join(topDir, 'sock');
    writeFileSync(topFile, 'host file');
    mkdirSync(topDir, { recursive: true });
    const server = await unixServer(socket);
    try {
      const report = await attack(spawner, [`stat:${topFile}`, `stat:${topDir}`, `connect:${socket}`], { network: true });
      expect(report).toEqual({ [`stat:${topFile}`]: 'ENOENT', [`stat:${topDir}`]: 'ENOENT', [`connect:${socket}`]: 'ENOENT' });
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
      rmSync(topDir, { recursive: true, force: true });
      rmSync(topFile, { force: true });
    }
  });

  // Not an attack: the guard against one. The host's tree is read-only in the sandbox, so a writable directory the
  // launcher does not mount (one given by path inside a system directory) would be read-only too.
  it('a writeDir given by path inside a system directory stays writable', async () => {
    const systemWriteDir = join('/usr/local/share', `mcp-attack-${process.pid}`);
    mkdirSync(systemWriteDir, { recursive: true });
    try {
      const report = await attack(spawner, [`chmod:${systemWriteDir}`], { writeDir: systemWriteDir });
      expect(report[`chmod:${systemWriteDir}`]).toBe('ok');
    } finally {
      rmSync(systemWriteDir, { recursive: true, force: true });
    }
  });

  // Not an attack either: a tree that is a top-level directory itself (a container's /data volume) is bound over the
  // cover of that directory, and sealing the cover must not make the tree bound on it read-only.
  it.runIf(process.getuid?.() === 0)('a writeDir that is a top-level directory stays writable', async () => {
    const topWriteDir = `/mcp-attack-${process.pid}-data`;
    mkdirSync(topWriteDir, { recursive: true });
    try {
      const report = await attack(spawner, [`chmod:${topWriteDir}`], { writeDir: topWriteDir });
      expect(report[`chmod:${topWriteDir}`]).toBe('ok');
    } finally {
      rmSync(topWriteDir, { recursive: true, force: true });
    }
  });

  // A device node in a tree the plugin may read (its data directory, its install root, a system directory) opens the
  // device whatever Landlock grants there: bubblewrap mounts every tree nodev. Made by root here; a plugin could not.
  it.runIf(process.getuid?.() === 0)('opens no device node found in its own trees', async () => {
    const nodes = [join(dataDir, 'zero-device'), join(installRoot, 'zero-device')];
    for (const node of nodes) {
      rmSync(node, { force: true });
      const made = spawnSync('mknod', ['-m', '0666', node, 'c', '1', '5'], { encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
    }
    try {
      const report = await attack(spawner, nodes.map((node) => `openr:${node}`));
      for (const node of nodes) expect(report[`openr:${node}`], node).toMatch(/^E(ACCES|PERM)$/);
    } finally {
      for (const node of nodes) rmSync(node, { force: true });
    }
  });

  // Memory outside the plugin's caps: bubblewrap's /dev is a tmpfs of its own, sized at half the host's memory, and a
  // plugin owning it (the host's user in its user namespace, or root without an identity) filled it where no control
  // group charges its pages (the rlimit fallback: RLIMIT_DATA does not count tmpfs), as /dev/shm, sized to the cap, no
  // longer can. Nothing but its writable directory, /dev/shm and its own /tmp (sized like /dev/shm: privateTmp.test.ts) takes a file.
  it('keeps no scratch space outside its writable directory, /dev/shm and its own sized /tmp', async () => {
    const places = ['/dev', '/'].map((dir) => join(dir, `mcp-attack-${process.pid}-scratch`));
    const own = [join(dataDir, 'scratch'), `/dev/shm/mcp-attack-${process.pid}`, `/tmp/mcp-attack-${process.pid}`];
    const report = await attack(spawner, [...places, ...own].map((path) => `create:${path}`));
    for (const path of places) expect(report[`create:${path}`], path).toMatch(/^E(ROFS|ACCES|PERM)$/);
    for (const path of own) expect(report[`create:${path}`], path).toBe('ok');
  });

  // The sandbox's process 1 is the plugin's neighbour: in its PID and mount namespaces, visible at /proc/1. bubblewrap's
  // holds no capability; one that kept root's every capability (on a root host, in the host's user namespace) would be
  // the one process of the sandbox a flaw in the kernel's checks of pid 1 could turn against the host.
  it('the sandbox\'s process 1 holds no capability but CAP_KILL', async () => {
    const status = (await attack(spawner, ['read:/proc/1/status']))['read:/proc/1/status']!;
    const sets = new Map([...status.matchAll(/^(Cap(?:Inh|Prm|Eff|Amb)):\s*([0-9a-f]+)$/gm)].map((m) => [m[1]!, BigInt(`0x${m[2]!}`)]));
    expect(sets.size).toBe(4);
    const CAP_KILL = 1n << 5n;
    for (const [set, bits] of sets) expect(bits & ~CAP_KILL, `${set} ${bits.toString(16)}`).toBe(0n);
  });

  // Anyone may read /proc/1/cmdline. The launcher's names the host's pid, its control groups (the host's own among
  // them, which /proc/self/cgroup no longer shows) and where the launcher is installed; bubblewrap's names none of them.
  it('a plugin learns nothing of the host from process 1\'s command line', async () => {
    const cmdline = (await attack(spawner, ['read:/proc/1/cmdline']))['read:/proc/1/cmdline']!;
    const args = cmdline.split('\0').filter((arg) => arg !== '');
    expect(args.length).toBeGreaterThan(0);
    expect(args.filter((arg) => arg === String(process.pid) || arg.includes('/sys/fs/cgroup') || arg.includes(process.cwd()))).toEqual([]);
  });

  // A plugin run as root (no identity: SandboxSpawner used directly on a root host) has no capability, but the kernel
  // lets user 0 write a sysctl by its mode alone: kernel.core_pattern names a program the kernel runs as root on the
  // next crash anywhere on the host. Opening for writing is the whole check (nothing is written).
  it('a plugin run as root opens no global sysctl for writing', async () => {
    const sysctls = ['/proc/sys/kernel/core_pattern', '/proc/sys/vm/drop_caches'];
    const report = await attack(spawner, sysctls.map((path) => `openw:${path}`));
    for (const path of sysctls) expect(report[`openw:${path}`], path).toMatch(/^E(ROFS|ACCES|PERM|NOENT)$/);
  });

  // A virtual machine socket belongs to no network namespace: on a guest with /dev/vsock (this machine, a Firecracker
  // guest) a plugin without network created one and could connect to the hypervisor's services. Only its creation is
  // tried here; nothing is connected to.
  it('a plugin without network creates no virtual machine (AF_VSOCK) socket', async () => {
    const source = join(base, 'vsock.c');
    writeFileSync(source, '#include <errno.h>\n#include <stdio.h>\n#include <sys/socket.h>\nint main(void) { int s = socket(40, SOCK_STREAM, 0); printf("{\\"errno\\":%d}\\n", s < 0 ? errno : 0); return 0; }\n');
    const probe = join(installRoot, 'vsock');
    expect(spawnSync('cc', ['-static', '-o', probe, source], { encoding: 'utf8' }).stderr).toBe('');
    const result = await spawner.spawn({ executable: unverifiedCommand([probe], installRoot), env: {}, network: false, writeDir: dataDir, hiddenPaths: [] });
    const p = result._unsafeUnwrap();
    started.push(p);
    const EPERM = 1;
    expect(await firstJsonLine(p.stdout)).toEqual({ errno: EPERM });
  });

  // socket() of a family or protocol the kernel has not loaded makes it load the module (net-pf-21 for RDS): every
  // rarely used protocol a distribution ships (RDS, TIPC, CAN, crypto sockets, SCTP, iSCSI over netlink, the sources of
  // past local root exploits) was one call away for any plugin. This kernel has no modules, so before the list they failed later,
  // with EAFNOSUPPORT or EPROTONOSUPPORT; refused by seccomp they are EPERM everywhere, whatever the host's kernel loads.
  // socketpair() looks the family up (loading its module) before finding it makes no pairs: it takes AF_UNIX only.
  it('a plugin with or without network creates no socket or socket pair of a family or protocol outside the list', async () => {
    const source = join(base, 'families.c');
    writeFileSync(
      source,
      '#include <errno.h>\n#include <stdio.h>\n#include <sys/socket.h>\n#include <sys/syscall.h>\n#include <unistd.h>\n' +
        'static void try(const char *name, int family, int type, int protocol) { int s = socket(family, type, protocol); printf("%s\\"%s\\":%d", family == 21 ? "{" : ",", name, s < 0 ? errno : 0); }\n' +
        'static void pair(const char *name, int family, int type) { int sv[2]; printf(",\\"%s\\":%d", name, socketpair(family, type, 0, sv) < 0 ? errno : 0); }\n' +
        'int main(void) { try("rds", 21, SOCK_SEQPACKET, 0); try("can", 29, SOCK_DGRAM, 1); try("tipc", 30, SOCK_RDM, 0); try("alg", 38, SOCK_SEQPACKET, 0); try("sctp", 2, SOCK_STREAM, 132); try("dccp", 10, 6, 33); try("iscsi", 16, SOCK_DGRAM, 8); try("route", 16, SOCK_DGRAM, 0); pair("pairRds", 21, SOCK_SEQPACKET); pair("pairCan", 29, SOCK_DGRAM); pair("pairTipc", 30, SOCK_RDM); pair("pairAlg", 38, SOCK_SEQPACKET); pair("pairVsock", 40, SOCK_STREAM); pair("pairX25", 9, SOCK_SEQPACKET); pair("pairUnix", 1, SOCK_STREAM); char params[120] = {0}; long ring = syscall(425, 1, params); printf(",\\"uring\\":%d}\\n", ring < 0 ? errno : 0); return 0; }\n',
    );
    const probe = join(installRoot, 'families');
    expect(spawnSync('cc', ['-static', '-o', probe, source], { encoding: 'utf8' }).stderr).toBe('');
    const [EPERM, ENOSYS] = [1, 38];
    for (const network of [false, true]) {
      const p = (await spawner.spawn({ executable: unverifiedCommand([probe], installRoot), env: {}, network, writeDir: dataDir, hiddenPaths: [] }))._unsafeUnwrap();
      started.push(p);
      const report = await firstJsonLine<Record<string, number>>(p.stdout);
      // io_uring's socket opcode would create any of them past the filter: refused with network too.
      const refused = { rds: EPERM, can: EPERM, tipc: EPERM, alg: EPERM, iscsi: EPERM, route: 0, uring: ENOSYS,
        pairRds: EPERM, pairCan: EPERM, pairTipc: EPERM, pairAlg: EPERM, pairVsock: EPERM, pairX25: EPERM, pairUnix: 0 };
      // With network an inet socket's protocol is the host's kernel's business (SCTP is a real protocol); without, only the listed ones.
      expect(report, `network: ${network}`).toEqual(network ? { ...refused, sctp: report.sctp, dccp: report.dccp } : { ...refused, sctp: EPERM, dccp: EPERM });
    }
  });
});

describe.each(LINUX_BACKENDS)('a networked plugin and the processes and sockets outside its sandbox (real %s)', (backend) => {
  let spawner: SandboxSpawner;
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend }))._unsafeUnwrap();
  });
  // As the host's user (root here, without an identity) and, on a root host, as a plugin user of its own (setpriv under
  // bubblewrap, which then runs the scope launcher without any capability).
  const identities = (): Partial<SandboxSpawnRequest>[] => {
    const identity = spawner.pluginIdentity(join(base, 'data'), 'attacker')._unsafeUnwrap();
    return identity === undefined ? [{}] : [{}, { identity }];
  };

  // An abstract Unix socket has no file a mount could hide: sharing the host's network namespace, a plugin reached the
  // host's every one (a desktop's X11 display and D-Bus, a container runtime's shim API), whose servers trust the peer's
  // uid. The launcher scopes them to the plugin's Landlock domain with network too, and so does bubblewrap's sandbox,
  // whose plugin the launcher starts in its scope-only mode (until attack round 4 a plugin under bubblewrap connected).
  it('a networked plugin reaches no abstract Unix socket of the host', async () => {
    const name = `mcp-attack-${process.pid}-abstract-${backend}`;
    const server = await unixServer(`\0${name}`);
    try {
      for (const identity of identities()) {
        const report = await attack(spawner, [`abstract:${name}`], { network: true, ...identity });
        expect(report[`abstract:${name}`], JSON.stringify(identity)).toBe('EPERM');
      }
      expect(server.connections()).toBe(0);
      expect(spawner.describe({ network: true, writeDir: dataDir, installRoot, hiddenPaths: [] }).abstractSocketsScoped).toBe(true);
    } finally {
      await server.close();
    }
  });

  // Its own abstract sockets stay usable: the scope refuses only those made outside the plugin's domain.
  it('a networked plugin still serves and reaches an abstract socket of its own', async () => {
    const name = `mcp-attack-${process.pid}-own-${backend}`;
    const own = `import { createServer, connect } from 'node:net';
const server = createServer((s) => s.end('hi')).listen('\\0${name}', () => {
  const c = connect({ path: '\\0${name}' });
  c.on('data', (d) => { process.stdout.write(JSON.stringify({ own: String(d) }) + '\\n'); server.close(); c.destroy(); });
  c.on('error', (e) => { process.stdout.write(JSON.stringify({ own: e.code }) + '\\n'); server.close(); });
});
`;
    writeFileSync(join(installRoot, 'own-abstract.mjs'), own);
    const result = await spawner.spawn({
      executable: unverifiedCommand([process.execPath, join(installRoot, 'own-abstract.mjs')], installRoot, nodeRuntimePaths()),
      env: {},
      network: true,
      writeDir: dataDir,
      hiddenPaths: [],
    });
    const p = result._unsafeUnwrap();
    started.push(p);
    expect(await firstJsonLine<Record<string, string>>(p.stdout)).toEqual({ own: 'hi' });
  });

  // Under bubblewrap the launcher that scopes the plugin is in the sandbox's root: the host's own file, run as root by
  // the Landlock backend. A plugin of a host that owns it (its user namespace maps the host's user) must not rewrite it.
  it('cannot rewrite or change the scope launcher it is shown', async () => {
    const launcher = '/.mcp-plugin-launcher';
    for (const identity of identities()) {
      const report = await attack(spawner, [`openw:${launcher}`, `chmod:${launcher}`, `utimes:${launcher}`], { network: true, ...identity });
      // Shown only under bubblewrap (the launcher backend applies its scopes itself): there read-only, elsewhere absent.
      const refused = backend === 'bubblewrap' ? /^E(ROFS|ACCES|PERM)$/ : /^ENOENT$/;
      for (const action of ['openw', 'chmod', 'utimes']) expect(report[`${action}:${launcher}`], `${action} ${JSON.stringify(identity)}`).toMatch(refused);
    }
  });

  // Where the host is installed (a home directory, an application's node_modules) is the host's business: the scope
  // launcher shown under bubblewrap must not name its host path, neither in process 1's command line nor as the root of
  // its mount in /proc/self/mountinfo (a bind of the host's file shows its path there; a copy shows bubblewrap's tmpfs).
  it('learns nothing of where the host\'s launcher is installed', async () => {
    const hostPath = realpathSync(findLauncher()._unsafeUnwrap());
    const report = await attack(spawner, ['read:/proc/self/mountinfo', 'read:/proc/1/cmdline'], { network: true });
    expect(report['read:/proc/self/mountinfo']).toContain('/proc');
    expect(report['read:/proc/self/mountinfo']).not.toContain(hostPath);
    expect(report['read:/proc/1/cmdline']!.split('\0').filter((arg) => arg.includes(hostPath))).toEqual([]);
  });

  // The sandbox's process 1 (bubblewrap's, the launcher's reaper) lies outside the plugin's domain: no signal reaches it,
  // not even the probe of signal 0, with network or without.
  it('signals nothing outside its own processes', async () => {
    for (const identity of identities()) {
      for (const network of [false, true]) {
        const report = await attack(spawner, ['signal:1'], { network, ...identity });
        expect(report['signal:1'], `network: ${network} ${JSON.stringify(identity)}`).toBe('EPERM');
      }
    }
  });
});

describe('the launcher a local user could swap', () => {
  // The probe proves the launcher at a path, every spawn runs whatever lies there then: a local user who may rename
  // files in its directory puts a program of theirs in its place after the probe, and the host runs it (as root).
  it('is refused when its directory (or one above it) lets others rename files in it', async () => {
    const shared = join(base, 'shared');
    const bin = join(shared, 'bin');
    mkdirSync(bin, { recursive: true });
    const launcherPath = join(bin, 'mcp-plugin-launcher');
    copyFileSync(launcherCandidates()[0]!, launcherPath);
    chmodSync(launcherPath, 0o755);
    expect(launcherProblem(launcherPath)).toBeUndefined();
    for (const [dir, mode] of [[bin, 0o777], [bin, 0o775], [shared, 0o757]] as const) {
      chmodSync(dir, mode);
      expect(launcherProblem(launcherPath), `${dir} ${mode.toString(8)}`).toMatch(/can be replaced: .* is writable by its group or others/);
      chmodSync(dir, 0o755);
    }
    // A sticky directory lets nobody but the file's owner rename over it: /tmp holds trusted launchers safely.
    chmodSync(bin, 0o1777);
    expect(launcherProblem(launcherPath)).toBeUndefined();
    chmodSync(bin, 0o777);
    const refused = await SandboxSpawner.create({ backend: 'landlock', launcherPath });
    expect(refused.isErr() ? refused.error.message + JSON.stringify(refused.error.details) : 'created').toMatch(/can be replaced/);
  });
});

describe('the bwrap a local user could plant on PATH', () => {
  // bwrap is looked up on PATH and run by the host (as root on a root host): a PATH directory others may write lets
  // them put a bwrap of theirs first, which passes the probe by running the real one after their own code.
  it('is refused when it lies in a directory others may write', async () => {
    const planted = join(base, 'planted-bin');
    const ran = join(base, 'planted-bwrap-ran');
    mkdirSync(planted, { recursive: true });
    chmodSync(planted, 0o777);
    writeFileSync(join(planted, 'bwrap'), `#!/bin/sh\ntouch ${ran}\nexec /usr/bin/bwrap "$@"\n`, { mode: 0o755 });
    const created = await SandboxSpawner.create({ backend: 'bubblewrap', searchPath: `${planted}:/usr/bin:/bin` });
    expect(existsSync(ran)).toBe(false);
    expect(created.isErr() ? created.error.message : 'created').toMatch(/cannot be trusted: .* can be replaced: .* is writable by its group or others/);
  });
});

describe('the launcher given a user id that is no user', () => {
  // setresuid(-1) changes nothing, so the id 4294967295 (-1 as uid_t) would leave the plugin root, and larger ids
  // wrap to another user than the one named: each is refused before the plugin runs.
  it.runIf(process.getuid?.() === 0)('refuses --user ids outside 1..4294967294 (no wrap, no -1)', () => {
    const writeDir = join(base, 'user-ids');
    mkdirSync(writeDir, { recursive: true });
    const program = join(base, 'user-ids.seccomp');
    writeFileSync(program, pluginSeccompFilter(false)!);
    for (const id of ['4294967295', String(2 ** 32 + 1000)]) {
      const marker = join(writeDir, `ran-as-${id}`);
      const spec = ['--cover', '/tmp', '--dir', base, '--dir', writeDir, '--bind', writeDir, 'rw', '--user', id, id, '--seccomp', '3'];
      const grants = ['--allow', '/usr', 'rx', '--allow', '/etc', 'rx', '--allow', writeDir, 'rwx'];
      const script = `exec 3<'${program}'; exec '${findLauncher()._unsafeUnwrap()}' "$@"`;
      const run = spawnSync('/bin/sh', ['-c', script, 'sh', ...spec, ...grants, '--', '/bin/sh', '-c', `id -u > ${marker}`], { encoding: 'utf8' });
      expect(existsSync(marker) ? `ran as ${readFileSync(marker, 'utf8').trim()}` : run.stderr, id).toMatch(/^mcp-plugin-launcher: spec: --user /);
      expect(run.status, id).toBe(1);
    }
  });
});

describe('the launcher whose host died before it started', () => {
  // PR_SET_PDEATHSIG acts only from when it is set: a host gone before the launcher's first instruction leaves it an
  // orphan whose parent (init or a subreaper) never dies, so its plugin would outlive the host. Comparing getppid()
  // with itself proves nothing; the host names its pid and the launcher checks it.
  it('refuses to run the plugin when its parent is no longer the host that named itself', () => {
    const writeDir = join(base, 'orphan');
    mkdirSync(writeDir, { recursive: true });
    const program = join(base, 'orphan.seccomp');
    writeFileSync(program, pluginSeccompFilter(false)!);
    const marker = join(writeDir, 'ran');
    const spec = ['--cover', '/tmp', '--dir', base, '--dir', writeDir, '--bind', writeDir, 'rw', '--seccomp', '3'];
    const grants = ['--allow', '/usr', 'rx', '--allow', '/etc', 'rx', '--allow', writeDir, 'rwx'];
    // The shell plays the host: its child starts the launcher only once the shell has exited and been reaped.
    const script = `exec 3<'${program}'; host=$$; (while kill -0 "$host" 2>/dev/null; do sleep 0.01; done; exec '${findLauncher()._unsafeUnwrap()}' --parent "$host" "$@") & exit 0`;
    const run = spawnSync('/bin/sh', ['-c', script, 'sh', ...spec, ...grants, '--', '/bin/sh', '-c', `touch ${marker}`], { encoding: 'utf8' });
    expect(run.stderr).toMatch(/^mcp-plugin-launcher: parent: the host \(pid \d+\) is gone\n$/);
    expect(existsSync(marker)).toBe(false);
  });
});
