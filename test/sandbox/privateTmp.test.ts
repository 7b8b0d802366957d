// The sandbox's own /tmp on the real kernel: real bubblewrap, the real Landlock launcher built from native/launcher.c,
// real child processes. Servers write to /tmp by name instead of TMPDIR (context-mode); each plugin process gets a
// private, writable, sized tmpfs there, and nothing of the host's /tmp or of another process's shows.
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { PRIVATE_TMP_MAX_BYTES, privateTmpBytes } from '../../src/sandbox/privateTmp.js';
import { SandboxSpawner, type SandboxSpawnerOptions, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

const MiB = 2 ** 20;
// Under the host's /tmp, as most installs of the tests are: the plugin's trees are mount points inside its own /tmp.
const base = mkdtempSync(join(tmpdir(), 'private-tmp-'));
const installRoot = join(base, 'install');
const home = join(base, 'home');
for (const d of [installRoot, home]) mkdirSync(d, { recursive: true });
const started: PluginProcess[] = [];
const hostMarkers: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  for (const m of hostMarkers) rmSync(m, { force: true });
});

const tag = (): string => `private-tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;

function writeDirFor(name: string, owner?: number): string {
  const dir = join(base, 'data', name);
  mkdirSync(dir, { recursive: true });
  if (owner !== undefined) chownSync(dir, owner, owner);
  return dir;
}

// Reads one JSON command per stdin line and answers one JSON line: write, read, list, or fill (until the file system refuses).
const AGENT = `
const fs = require('node:fs');
const code = (f) => { try { return f(); } catch (e) { return e.code ?? String(e); } };
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const c = JSON.parse(line);
  let r;
  if (c.op === 'write') r = code(() => { fs.writeFileSync(c.path, c.text); return 'ok'; });
  else if (c.op === 'read') r = code(() => fs.readFileSync(c.path, 'utf8'));
  else if (c.op === 'list') r = code(() => fs.readdirSync(c.path).sort());
  else if (c.op === 'stat') r = code(() => { const s = fs.statSync(c.path); return (s.mode & 0o7777).toString(8); });
  else if (c.op === 'fill') {
    const fd = fs.openSync(c.path, 'w'), chunk = Buffer.alloc(MiB(1), 7);
    let written = 0;
    r = code(() => { for (let i = 0; i < c.mib; i++) written += fs.writeSync(fd, chunk); return 'wrote'; });
    fs.closeSync(fd);
    r = { r, written };
  }
  process.stdout.write(JSON.stringify(r) + '\\n');
});
function MiB(n) { return n * 1024 * 1024; }
`;

interface Agent {
  readonly process: PluginProcess;
  ask(command: Record<string, unknown>): Promise<unknown>;
}

async function startAgent(using: SandboxSpawner, writeDir: string, overrides: Partial<SandboxSpawnRequest> = {}): Promise<Agent> {
  const result = await using.spawn({
    executable: unverifiedCommand([process.execPath, '-e', AGENT], installRoot, nodeRuntimePaths()),
    env: {},
    network: false,
    writeDir,
    hiddenPaths: [],
    pluginId: 'tmp-test',
    ...overrides,
  });
  if (result.isErr()) throw result.error;
  const child = result.value;
  started.push(child);
  let buffered = '';
  const waiting: ((line: string) => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      waiting.shift()?.(line);
    }
  });
  return {
    process: child,
    ask: (command) =>
      new Promise((resolve, reject) => {
        waiting.push((line) => resolve(JSON.parse(line)));
        child.exited.then((exit) => reject(new Error(`the plugin exited (${exit.description}): ${child.stderrTail()}`)), reject);
        child.stdin.write(`${JSON.stringify(command)}\n`);
      }),
  };
}

async function spawner(backend: (typeof LINUX_BACKENDS)[number], options: SandboxSpawnerOptions = {}): Promise<SandboxSpawner> {
  return (await SandboxSpawner.create({ homeDir: home, backend, ...options }))._unsafeUnwrap();
}

describe('privateTmpBytes', () => {
  it('is the memory cap up to the bound in etc, the bound without a cap, never 0', () => {
    expect(privateTmpBytes(64 * MiB)).toBe(64 * MiB);
    expect(privateTmpBytes(PRIVATE_TMP_MAX_BYTES * 4)).toBe(PRIVATE_TMP_MAX_BYTES);
    expect(privateTmpBytes(null)).toBe(PRIVATE_TMP_MAX_BYTES);
    expect(privateTmpBytes(0)).toBe(1);
  });
});

describe.each(LINUX_BACKENDS)('the sandbox own /tmp (%s)', (backend) => {
  it('is writable, sticky and empty: the host /tmp files and the plugin trees parents alone are not there', async () => {
    const hostFile = join('/tmp', `${tag()}.txt`);
    hostMarkers.push(hostFile);
    writeFileSync(hostFile, 'host secret', { mode: 0o644 });
    const agent = await startAgent(await spawner(backend), writeDirFor('a'));
    const name = `/tmp/${tag()}`;
    expect(await agent.ask({ op: 'write', path: name, text: 'mine' })).toBe('ok');
    expect(await agent.ask({ op: 'read', path: name })).toBe('mine');
    expect(await agent.ask({ op: 'read', path: hostFile })).toBe('ENOENT');
    expect(await agent.ask({ op: 'stat', path: '/tmp' })).toBe('1777');
    // Only the plugin's own file and the mount points' parent directory (base lies in the host's /tmp).
    expect(await agent.ask({ op: 'list', path: '/tmp' })).toEqual([base.split('/')[2], name.slice(5)].sort());
    expect(existsSync(name)).toBe(false);
  });

  it('is private to each process: another plugin, and a second process of the same plugin, see none of it', async () => {
    const s = await spawner(backend);
    const first = await startAgent(s, writeDirFor('first'));
    const other = await startAgent(s, writeDirFor('other'), { pluginId: 'tmp-other' });
    const again = await startAgent(s, writeDirFor('first'));
    const name = `/tmp/${tag()}`;
    expect(await first.ask({ op: 'write', path: name, text: 'first' })).toBe('ok');
    expect(await other.ask({ op: 'read', path: name })).toBe('ENOENT');
    expect(await again.ask({ op: 'read', path: name })).toBe('ENOENT');
    expect(await other.ask({ op: 'write', path: name, text: 'other' })).toBe('ok');
    expect(await first.ask({ op: 'read', path: name })).toBe('first');
  });

  it('is sized to the memory cap: writes past it fail with ENOSPC', async () => {
    const agent = await startAgent(await spawner(backend, { controlGroups: 'off', memoryLimitBytes: 48 * MiB }), writeDirFor('fill'));
    const answer = (await agent.ask({ op: 'fill', path: '/tmp/fill', mib: 96 })) as { r: string; written: number };
    expect(answer.r).toBe('ENOSPC');
    expect(answer.written).toBeGreaterThan(0);
    expect(answer.written).toBeLessThanOrEqual(48 * MiB);
  });

  it('leaves nothing on the host once the plugin stopped', async () => {
    const writeDir = writeDirFor('gone');
    const before = new Set(readdirSync('/tmp'));
    const agent = await startAgent(await spawner(backend), writeDir);
    const name = tag();
    expect(await agent.ask({ op: 'write', path: `/tmp/${name}`, text: 'x' })).toBe('ok');
    await agent.process.stop({ stdinGraceMs: 0, termGraceMs: 0 });
    expect(existsSync(join('/tmp', name))).toBe(false);
    expect(readdirSync(writeDir)).toEqual([]);
    // Other engineers' runs share the host's /tmp: only names of this test's form count.
    expect(readdirSync('/tmp').filter((n) => !before.has(n) && n.startsWith('private-tmp-'))).toEqual([]);
  });

  it('is writable by the plugin own user on a root host', async () => {
    const uid = 1_900_000_123;
    const agent = await startAgent(await spawner(backend), writeDirFor('user', uid), { identity: { uid, gid: uid } });
    const name = `/tmp/${tag()}`;
    expect(await agent.ask({ op: 'write', path: name, text: 'as its user' })).toBe('ok');
    expect(await agent.ask({ op: 'read', path: name })).toBe('as its user');
    // The mount points' parents stay root's: the plugin's user adds nothing beside its trees.
    expect(await agent.ask({ op: 'write', path: join(base, 'planted'), text: 'x' })).toMatch(/^E(ACCES|ROFS|PERM)$/);
  });
});
