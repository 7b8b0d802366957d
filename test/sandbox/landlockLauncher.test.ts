/**
 * The Landlock launcher itself (native/launcher.c): each step that can fail
 * stops it before the plugin runs, with its own stable message; the runtime
 * trusts only a launcher nobody else can rewrite, built for this machine and
 * proved by the probe, and `auto` falls back to bubblewrap otherwise, saying
 * why; inside, the sandbox's process 1 is out of the plugin's reach.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { findLauncher, launcherProblem } from '../../src/sandbox/launcherBinary.js';
import { pluginSeccompFilter } from '../../src/sandbox/seccompFilter.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { firstJsonLine, PROBE } from '../support/processes.js';

const base = mkdtempSync(join(tmpdir(), 'landlock-launcher-'));
const launcher = findLauncher()._unsafeUnwrap();
const installRoot = join(base, 'install');
const writeDir = join(base, 'data');

beforeAll(() => {
  for (const dir of [installRoot, writeDir]) mkdirSync(dir, { recursive: true });
  copyFileSync(PROBE, join(installRoot, 'probe.mjs'));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Runs the launcher with `spec`, `program` on fd 3 as its seccomp program, and a plugin that marks that it ran (with `marking`'s output). */
function launchWithProgram(spec: readonly string[], program: Buffer, marking = 'echo'): { status: number | null; stderr: string; ran: boolean; mark: string } {
  const file = join(base, `program-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, program);
  const marker = join(writeDir, `ran-${Math.random().toString(36).slice(2)}`);
  // The host's own trees are read-only inside; the plugin's writable directory is shown over an empty /tmp.
  const writable = ['--cover', '/tmp', '--dir', base, '--dir', writeDir, '--bind', writeDir, 'rw'];
  const grants = ['--allow', '/usr', 'rx', '--allow', '/etc', 'rx', '--allow', '/proc', 'r', '--allow', writeDir, 'rwx'];
  const script = `exec 3<'${file}'; exec '${launcher}' "$@"`;
  const result = spawnSync('/bin/sh', ['-c', script, 'sh', ...writable, ...spec, '--seccomp', '3', ...grants, '--', '/bin/sh', '-c', `${marking} > ${marker}`], { encoding: 'utf8' });
  const ran = existsSync(marker);
  return { status: result.status, stderr: result.stderr, ran, mark: ran ? readFileSync(marker, 'utf8') : '' };
}

describe('the launcher refuses to run a plugin when a step fails', () => {
  it('runs the plugin when every step succeeds', () => {
    const run = launchWithProgram([], pluginSeccompFilter(false)!);
    expect(run).toMatchObject({ status: 0, stderr: '', ran: true });
  });

  it('joins its control groups by writing 0, itself, into each join file (a pid would move a whole thread group)', () => {
    const files = [join(base, 'join-memory'), join(base, 'join-pids')];
    for (const file of files) writeFileSync(file, '');
    const run = launchWithProgram(files.flatMap((file) => ['--cgroup', file]), pluginSeccompFilter(false)!);
    expect(run).toMatchObject({ status: 0, stderr: '', ran: true });
    expect(files.map((file) => readFileSync(file, 'utf8'))).toEqual(['0\n', '0\n']);
  });

  it('forks the sandbox into a v2 group it is given (clone3 into the group: no process moves)', () => {
    const mount = /^\S+ \S+ \S+ \/ (\S+) .* - cgroup2 /m.exec(readFileSync('/proc/self/mountinfo', 'utf8'))?.[1];
    expect(mount, 'a cgroup v2 hierarchy is mounted').toBeDefined();
    const group = join(mount!, `launcher-test-${process.pid}`);
    mkdirSync(group);
    try {
      // Read from inside: /proc/self/cgroup is rooted at the sandbox's own group there (a control group namespace).
      const run = launchWithProgram(['--cgroup-into', group, '--allow', group, 'r'], pluginSeccompFilter(false)!, `cat ${group}/cgroup.procs`);
      expect(run).toMatchObject({ status: 0, stderr: '', ran: true });
      const inGroup = run.mark.trim().split('\n');
      // The sandbox's process 1 and the plugin (pids of the sandbox's namespace).
      expect(inGroup).toContain('1');
      expect(inGroup.length).toBeGreaterThanOrEqual(2);
    } finally {
      rmdirSync(group);
    }
  });

  it('an empty seccomp program (the host withheld it): the plugin never runs', () => {
    const run = launchWithProgram([], Buffer.alloc(0));
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^mcp-plugin-launcher: seccomp: no valid program on the descriptor \(0 bytes\)\n$/);
    expect(run.ran).toBe(false);
  });

  it('a tree to show that became a link after the host resolved it: refused, never followed', () => {
    const elsewhere = join(base, 'elsewhere');
    const planted = join(base, 'planted');
    mkdirSync(elsewhere, { recursive: true });
    symlinkSync(elsewhere, planted);
    const run = launchWithProgram(['--bind', planted, 'ro'], pluginSeccompFilter(false)!);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^mcp-plugin-launcher: bind: .*planted: Too many levels of symbolic links\n$/);
    expect(run.ran).toBe(false);
  });

  it('a spec it cannot honour: an unknown option, root as the plugin user, the root directory covered, a report on standard output', () => {
    const cases: [string[], RegExp][] = [
      [['--share-everything'], /^mcp-plugin-launcher: spec: unknown option '--share-everything'\n$/],
      [['--report', '1'], /^mcp-plugin-launcher: spec: --report needs a descriptor number of 3 or more\n$/],
      [['--user', '0', '0'], /^mcp-plugin-launcher: spec: --user must name a user other than root\n$/],
      [['--cover', '/'], /^mcp-plugin-launcher: cover: the root directory cannot be covered\n$/],
      [['--allow', '/nonexistent-grant', 'r'], /^mcp-plugin-launcher: landlock: \/nonexistent-grant: No such file or directory\n$/],
      // A tmpfs of size 0 has no limit; a sealed private /tmp would be read-only again.
      [['--tmp', '0'], /^mcp-plugin-launcher: spec: --tmp needs a size above 0\n$/],
      [['--tmp', '4096', '--seal', '/tmp'], /^mcp-plugin-launcher: spec: --tmp: \/tmp is the sandbox's own writable \/tmp and cannot be sealed\n$/],
    ];
    for (const [spec, message] of cases) {
      const run = launchWithProgram(spec, pluginSeccompFilter(false)!);
      expect(run.status, spec.join(' ')).toBe(1);
      expect(run.stderr, spec.join(' ')).toMatch(message);
      expect(run.ran, spec.join(' ')).toBe(false);
    }
  });
});

describe("the plugin's session", () => {
  // script(1) gives the launcher a host with a controlling terminal, as a CLI run in a terminal has.
  const hasScript = spawnSync('script', ['--version']).status === 0;

  it.runIf(hasScript).each([
    ['a child of the session leader, as the host starts it', ''],
    ['the session leader itself (exec), as a launcher run directly may be', 'exec '],
  ])("%s: neither the host's process group nor its terminal, even where /dev/tty is granted", (_label, how) => {
    const file = join(base, `program-${Math.random().toString(36).slice(2)}`);
    writeFileSync(file, pluginSeccompFilter(false)!);
    const marker = join(writeDir, `session-${Math.random().toString(36).slice(2)}`);
    const writable = ['--cover', '/tmp', '--dir', base, '--dir', writeDir, '--bind', writeDir, 'rw'];
    const grants = ['--allow', '/usr', 'rx', '--allow', '/etc', 'rx', '--allow', '/proc', 'r', '--allow', '/dev/tty', 'rw', '--allow', writeDir, 'rwx'];
    // Fields 5 to 7 of /proc/self/stat: process group, session and controlling terminal (0: none), as the sandbox's
    // PID namespace shows them (0 for a group or session led from outside it).
    const plugin = `set -- $(cut -d')' -f2 /proc/self/stat); echo "$3 $4 $5" > ${marker}; if (exec 4<>/dev/tty) 2>/dev/null; then echo tty >> ${marker}; else echo no-tty >> ${marker}; fi`;
    const quote = (arg: string): string => `'${arg.replaceAll("'", "'\\''")}'`;
    const launch = [launcher, ...writable, '--seccomp', '3', ...grants, '--', '/bin/sh', '-c', plugin].map(quote).join(' ');
    const outer = `set -- $(cut -d')' -f2 /proc/self/stat); echo "host-tty $5"; exec 3<${quote(file)}; ${how}${launch}; exit $?`;
    const run = spawnSync('script', ['-qec', outer, '/dev/null'], { encoding: 'utf8' });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/host-tty [1-9][0-9]*/);
    const [ids, tty] = readFileSync(marker, 'utf8').trim().split('\n');
    const [group, session, terminal] = ids!.split(' ').map(Number);
    // Its process group and session are the launcher's or the host's, made outside the namespace (a session of its
    // own, which costs every round trip a scheduler autogroup of its own, would be led by the plugin itself); as a
    // child of the leader, its group is the launcher's own, not the host's, which terminal signals reach.
    expect(group).toBe(0);
    expect(session).toBe(0);
    expect(terminal).toBe(0);
    expect(tty).toBe('no-tty');
  });
});

describe('which launcher the runtime trusts', () => {
  const copy = (name: string, mode: number): string => {
    const path = join(base, name);
    copyFileSync(launcher, path);
    chmodSync(path, mode);
    return path;
  };

  it('only a regular executable of this architecture that neither its group nor others can write, owned by root or the host user', () => {
    expect(launcherProblem(copy('good', 0o755))).toBeUndefined();
    expect(launcherProblem(copy('group-writable', 0o775))).toMatch(/writable by its group or others \(mode 775\)/);
    expect(launcherProblem(copy('world-writable', 0o757))).toMatch(/writable by its group or others/);
    const foreign = copy('foreign', 0o755);
    chownSync(foreign, 4242, 4242);
    expect(launcherProblem(foreign, process.arch, 1000)).toMatch(/owned by uid 4242, neither root nor the host's user/);
    const script = join(base, 'script');
    writeFileSync(script, '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    expect(launcherProblem(script)).toMatch(/not an ELF executable/);
    expect(launcherProblem(copy('other-arch', 0o755), process.arch === 'arm64' ? 'x64' : 'arm64')).toMatch(/was built for ELF machine/);
    expect(launcherProblem(join(base, 'absent'))).toMatch(/no launcher at/);
  });

  it("forced, an untrusted launcher fails closed; under 'auto' bubblewrap runs and describe() says why", async () => {
    const untrusted = copy('untrusted', 0o775);
    const forced = (await SandboxSpawner.create({ backend: 'landlock', launcherPath: untrusted }))._unsafeUnwrapErr();
    expect(forced).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', details: { cause: 'launcher_unusable' } });
    const auto = (await SandboxSpawner.create({ backend: 'auto', launcherPath: untrusted }))._unsafeUnwrap();
    expect(auto.backendName).toBe('bubblewrap');
    expect(auto.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).backendFallback).toMatch(/writable by its group or others/);
  });

  it("a launcher that does not confine is caught by the probe: refused when forced, bubblewrap under 'auto'", async () => {
    // A trusted-looking ELF that skips its whole spec and runs the plugin unconfined.
    const source = join(base, 'unconfined.c');
    writeFileSync(source, '#include <string.h>\n#include <unistd.h>\nint main(int c, char **v) { for (int i = 1; i < c; i++) if (!strcmp(v[i], "--")) execv(v[i + 1], v + i + 1); return 1; }\n');
    const unconfined = join(base, 'unconfined');
    expect(spawnSync('cc', ['-o', unconfined, source]).status).toBe(0);
    const forced = (await SandboxSpawner.create({ backend: 'landlock', launcherPath: unconfined }))._unsafeUnwrapErr();
    expect(forced).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', details: { cause: 'enforcement_not_proved' } });
    const auto = (await SandboxSpawner.create({ backend: 'auto', launcherPath: unconfined }))._unsafeUnwrap();
    expect(auto.backendName).toBe('bubblewrap');
    expect(auto.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).backendFallback).toMatch(/not proved: .*does not enforce/);
    // Proved at the first spawn instead: the spawn runs under bubblewrap, and the fallback is known from then on.
    const late = (await SandboxSpawner.create({ backend: 'auto', launcherPath: unconfined, proveAt: 'first_spawn' }))._unsafeUnwrap();
    const spawned = (await late.spawn({ executable: unverifiedCommand(['/bin/true'], installRoot), env: {}, network: false, writeDir, hiddenPaths: [] }))._unsafeUnwrap();
    expect((await spawned.exited).status).toBe(0);
    expect(late.backendName).toBe('bubblewrap');
    expect(late.describe({ installRoot, network: false, writeDir, hiddenPaths: [] }).backendFallback).toMatch(/not proved/);
  });

  it('a launcher that never gets to answer which Landlock scopes the kernel has fails closed, under bubblewrap too', async () => {
    // Killed before it answers, as a fork refused or a timeout on a loaded machine leaves it: not ABI 0 (no scopes, a warning), but a refusal to open.
    const source = join(base, 'killed.c');
    writeFileSync(source, '#include <signal.h>\n#include <string.h>\nint main(int c, char **v) { if (c > 1 && !strcmp(v[1], "--landlock-abi")) raise(SIGKILL); return 1; }\n');
    const killed = join(base, 'killed');
    expect(spawnSync('cc', ['-o', killed, source]).status).toBe(0);
    for (const backend of ['bubblewrap', 'auto'] as const) {
      const refused = (await SandboxSpawner.create({ backend, launcherPath: killed }))._unsafeUnwrapErr();
      expect(refused).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', details: { cause: 'launcher_unusable', launcher_problem: expect.stringMatching(/--landlock-abi did not answer \(killed by SIGKILL\)/) } });
    }
    // Exit 127 is the dynamic loader's failure (a shared library it could not map under memory pressure), not an answer.
    const loaderSource = join(base, 'loader-failed.c');
    writeFileSync(loaderSource, '#include <string.h>\nint main(int c, char **v) { return c > 1 && !strcmp(v[1], "--landlock-abi") ? 127 : 1; }\n');
    const loaderFailed = join(base, 'loader-failed');
    expect(spawnSync('cc', ['-o', loaderFailed, loaderSource]).status).toBe(0);
    const refused = (await SandboxSpawner.create({ backend: 'bubblewrap', launcherPath: loaderFailed }))._unsafeUnwrapErr();
    expect(refused.details).toMatchObject({ cause: 'launcher_unusable', launcher_problem: expect.stringMatching(/exit status 127/) });
  });

  it("'auto' picks the launcher when it is trusted and proved, and names it in describe()", async () => {
    const auto = (await SandboxSpawner.create({ backend: 'auto' }))._unsafeUnwrap();
    expect(auto.backendName).toBe('landlock');
    const policy = auto.describe({ installRoot, network: false, writeDir, hiddenPaths: [] });
    expect(policy).toMatchObject({ backend: 'landlock', enforced: true, ownPidNamespace: true, diesWithHost: true, capabilitiesDropped: true });
    expect(policy.backendFallback).toBeUndefined();
  });
});

describe("the sandbox's process 1 (the launcher's reaper)", () => {
  let plugin: PluginProcess | undefined;
  afterAll(async () => {
    await plugin?.stop({ stdinGraceMs: 0, termGraceMs: 0 });
  });

  it('is out of the plugin’s reach: its environment unreadable, signals to it refused', async () => {
    const spawner = (await SandboxSpawner.create({ backend: 'landlock' }))._unsafeUnwrap();
    const actions = ['read:/proc/1/environ', 'signal:1', 'read:/proc/1/mem'];
    const spawned = await spawner.spawn({
      executable: unverifiedCommand([process.execPath, join(installRoot, 'probe.mjs'), ...actions], installRoot, nodeRuntimePaths()),
      env: {},
      network: false,
      writeDir,
      hiddenPaths: [],
    });
    plugin = spawned._unsafeUnwrap();
    expect(await firstJsonLine(plugin.stdout)).toEqual({ 'read:/proc/1/environ': 'EACCES', 'signal:1': 'EPERM', 'read:/proc/1/mem': 'EACCES' });
  });

  // Process 1 drops root's capabilities and overwrites its command line once the plugin is forked. A plugin whose first
  // instructions read /proc/1 (a static program, no loader in between) must still find both done: the plugin waits for
  // process 1. Without that wait it won the race in about one spawn in twenty on this 2-core machine.
  it('has dropped its capabilities and hidden its command line before the plugin runs its first instruction', async () => {
    const source = join(base, 'first-look.c');
    writeFileSync(
      source,
      `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
  char cmdline[16384], status[8192];
  int fd = open("/proc/1/cmdline", O_RDONLY);
  long cmdlineLength = read(fd, cmdline, sizeof cmdline);
  fd = open("/proc/1/status", O_RDONLY);
  long statusLength = read(fd, status, sizeof status - 1);
  status[statusLength > 0 ? statusLength : 0] = 0;
  int words = 0;
  for (long i = 0; i < cmdlineLength; i++) words += cmdline[i] != 0 && (i == 0 || cmdline[i - 1] == 0);
  char *effective = strstr(status, "CapEff:");
  printf("{\\"words\\":%d,\\"effective\\":\\"%.16s\\"}\\n", words, effective ? effective + 8 : "?");
  return 0;
}
`,
    );
    const firstLook = join(installRoot, 'first-look');
    const built = spawnSync('cc', ['-O1', '-static', '-o', firstLook, source], { encoding: 'utf8' });
    expect(built.stderr).toBe('');
    const spawner = (await SandboxSpawner.create({ backend: 'landlock' }))._unsafeUnwrap();
    const seen = new Map<string, number>();
    for (let run = 0; run < 100; run++) {
      const spawned = (await spawner.spawn({ executable: unverifiedCommand([firstLook], installRoot), env: {}, network: false, writeDir, hiddenPaths: [] }))._unsafeUnwrap();
      const line = JSON.stringify(await firstJsonLine(spawned.stdout));
      await spawned.exited;
      seen.set(line, (seen.get(line) ?? 0) + 1);
    }
    expect([...seen.keys()]).toEqual([JSON.stringify({ words: 1, effective: '0000000000000000' })]);
  });
});
