import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { spawnPluginProcess, unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { descendantsOf } from '../../src/process/processTree.js';
import { eventually } from '../support/eventually.js';
import { FIXTURES, firstJsonLine, killAllWith, LIFECYCLE, processesWith, PROBE } from '../support/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'plain-spawn-'));
const markers: string[] = [];
const started: PluginProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  markers.splice(0).forEach(killAllWith);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function marker(): string {
  const m = `mk-${process.pid}-${Math.random().toString(36).slice(2)}`;
  markers.push(m);
  return m;
}

async function run(args: string[], options: Partial<Parameters<typeof spawnPluginProcess>[0]> = {}): Promise<PluginProcess> {
  const result = await spawnPluginProcess({ executable: unverifiedCommand([process.execPath, ...args], FIXTURES), env: {}, ...options });
  if (result.isErr()) throw result.error;
  started.push(result.value);
  return result.value;
}

describe('spawnPluginProcess (real processes)', () => {
  it('talks over stdin/stdout and ends at EOF with status 0 without any signal', async () => {
    const p = await run([LIFECYCLE, 'echo']);
    const line = firstJsonLine(p.stdout);
    p.stdin.write('{"hello":"plugin"}\n');
    expect(await line).toEqual({ hello: 'plugin' });
    const exit = await p.stop({ stdinGraceMs: 20_000, termGraceMs: 20_000 });
    expect(exit).toEqual({ code: 0, signal: null, status: 0, description: 'exited with status 0' });
    expect(p.exitInfo).toEqual(exit);
  });

  it('passes exactly the given environment, nothing of the parent', async () => {
    const p = await run([PROBE, 'env'], { env: { ONLY_THIS: 'yes', PATH: '/usr/bin' } });
    expect((await firstJsonLine(p.stdout)).env).toEqual({ ONLY_THIS: 'yes', PATH: '/usr/bin' });
  });

  it('hands inherited descriptors over as fds 3, 4, …', async () => {
    const a = join(dir, 'fd-a');
    const b = join(dir, 'fd-b');
    writeFileSync(a, 'first descriptor');
    writeFileSync(b, 'second descriptor');
    const fds = [openSync(a, 'r'), openSync(b, 'r')];
    let released = false;
    const executable = { ...unverifiedCommand([process.execPath, PROBE, 'readfd:3', 'readfd:4'], FIXTURES), inheritFds: fds, release: () => { released = true; fds.forEach(closeSync); } };
    const result = await spawnPluginProcess({ executable, env: {} });
    expect(result.isOk()).toBe(true);
    started.push(result._unsafeUnwrap());
    expect(released).toBe(true);
    expect(await firstJsonLine(result._unsafeUnwrap().stdout)).toEqual({ 'readfd:3': 'first descriptor', 'readfd:4': 'second descriptor' });
  });

  it('sends SIGTERM when the plugin ignores EOF', async () => {
    const p = await run([LIFECYCLE, 'ignore-eof']);
    const exit = await p.stop({ stdinGraceMs: 100, termGraceMs: 20_000 });
    expect(exit).toMatchObject({ signal: 'SIGTERM', status: 143 });
  });

  it('sends SIGKILL when the plugin also ignores SIGTERM, and says the host did it', async () => {
    const p = await run([LIFECYCLE, 'ignore-term']);
    expect(await firstJsonLine(p.stdout)).toEqual({ ready: true });
    const exit = await p.stop({ stdinGraceMs: 50, termGraceMs: 300 });
    expect(exit).toMatchObject({ signal: 'SIGKILL', status: 137 });
    expect(exit.description).toContain('sent by the host');
    expect(p.stderrTail()).toContain('ignoring SIGTERM');
  });

  it('stop() is idempotent', async () => {
    const p = await run([LIFECYCLE, 'ignore-eof']);
    const [a, b] = await Promise.all([p.stop({ stdinGraceMs: 50 }), p.stop()]);
    expect(a).toBe(b);
    expect(await p.stop()).toBe(a);
  });

  it('stops the whole tree: no grandchild survives stop()', async () => {
    const m = marker();
    const p = await run([LIFECYCLE, 'tree', m]);
    const { grandchild } = await firstJsonLine<{ grandchild: number }>(p.stdout);
    expect(descendantsOf(p.pid)).toContain(grandchild);
    await p.stop({ stdinGraceMs: 50, termGraceMs: 5_000 });
    expect(await eventually(() => processesWith(m).length === 0)).toBe(true);
  });

  it('kills what a plugin left behind when it exits by itself', async () => {
    const m = marker();
    const p = await run([LIFECYCLE, 'orphan', m]);
    await firstJsonLine(p.stdout);
    await p.exited;
    expect(await eventually(() => processesWith(m).length === 0)).toBe(true);
  });

  it('drains a stderr flood nobody reads into a bounded ring', async () => {
    const p = await run([LIFECYCLE, 'flood', String(4 * 1024 * 1024)], { stderrRingBytes: 4096 });
    const done = new Promise<string>((resolve) => p.stdout.once('data', (c: Buffer) => resolve(c.toString())));
    expect(await done).toBe('done\n');
    const exit = await p.exited;
    expect(exit.status).toBe(0);
    expect(Buffer.byteLength(p.stderrTail())).toBeLessThanOrEqual(4096);
    expect(p.stderrTail().endsWith('last line\n')).toBe(true);
  });

  it('hands stderr lines to listeners', async () => {
    const p = await run([LIFECYCLE, 'crash', '3']);
    const lines: string[] = [];
    p.onStderrLine((l) => lines.push(l));
    const exit = await p.exited;
    expect(exit).toMatchObject({ code: 3, status: 3, description: 'exited with status 3' });
    expect(lines).toEqual(['fatal: something broke']);
    expect(p.stderrTail()).toBe('fatal: something broke\n');
  });

  it('reports a SIGKILL it did not send as likely out of memory', async () => {
    const p = await run([LIFECYCLE, 'selfkill']);
    expect(await p.exited).toMatchObject({ signal: 'SIGKILL', status: 137, description: 'killed by SIGKILL (137, likely out of memory)' });
  });

  it('fails with PLUGIN_SPAWN_FAILED and diagnostics when the program cannot run, spawning nothing', async () => {
    const before = descendantsOf(process.pid).length;
    let released = false;
    const executable = { ...unverifiedCommand([join(dir, 'does-not-exist')], FIXTURES), release: () => { released = true; } };
    const result = await spawnPluginProcess({ executable, env: {} });
    expect(result._unsafeUnwrapErr().code).toBe('PLUGIN_SPAWN_FAILED');
    expect(result._unsafeUnwrapErr().details).toMatchObject({ path: join(dir, 'does-not-exist'), errno: 'ENOENT' });
    expect(released).toBe(true);
    expect(descendantsOf(process.pid).length).toBe(before);
  });

  it('fails with PLUGIN_SPAWN_FAILED when a bare program name is not on PATH', async () => {
    const result = await spawnPluginProcess({ executable: unverifiedCommand(['no-such-plugin-binary'], FIXTURES), env: { PATH: dir }, setprivPath: false });
    expect(result._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SPAWN_FAILED', details: { errno: 'ENOENT' } });
  });

  it('the plugin dies with a host killed by SIGKILL (setpriv --pdeathsig)', async () => {
    const m = marker();
    const host = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'dying-host.ts'), 'plain', m, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    const ready = await new Promise<string>((resolve) => host.stdout.on('data', (c: Buffer) => resolve(c.toString())));
    expect(ready).toMatch(/^ready \d+/);
    const pluginPid = Number(ready.split(' ')[1]);
    expect(processesWith(m)).toContain(pluginPid);
    host.kill('SIGKILL');
    expect(await eventually(() => !processesWith(m).includes(pluginPid))).toBe(true);
  });
});
