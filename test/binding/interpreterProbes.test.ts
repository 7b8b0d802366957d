/**
 * The host reads a pinned Node interpreter's version at install (to pick how
 * the main module is checked, and to compare the package's engines range).
 * The host's own Node is never run for it; any other Node is a file the
 * package's `#!` line chose and runs only inside the plugins' sandbox
 * (review R6 N2: it ran on the host, unsandboxed, as the host's user), and a
 * file not named like Node is never asked at all (review R7 N4). The program
 * asked is a native one that leaves a mark wherever it runs. An MCP
 * Bundle's node or python interpreter is asked the same way for its
 * `compatibility.runtimes` check (it ran on the host too).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  confinedInterpreterVersion,
  interpreterVersionOf,
  nodeVersionOf,
  type InterpreterVersionProbe,
} from '../../src/binding/interpreterVersion.js';
import { nodeMainLoadingFor, probeNodeMainLoading } from '../../src/binding/nodeMain.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { LINUX_BACKENDS } from '../sandbox/sandboxBackends.js';
import { markingNode, markingProgram } from './helpers/markingNode.js';

// The system's Python 3, which a marking `python3` runs; its version as it says it on the host (it is the system's own).
const SYSTEM_PYTHON = '/usr/bin/python3';
const systemPythonVersion = (): string | undefined => /^Python (\d+\.\d+\.\d+)/.exec(execFileSync(SYSTEM_PYTHON, ['--version'], { encoding: 'utf8' }))?.[1];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'interpreter-probes-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A probe that records what it is asked and answers a Node 20. */
function recordingProbe(): { probe: InterpreterVersionProbe; asked: string[] } {
  const asked: string[] = [];
  return { asked, probe: async (path) => (asked.push(path), '20.20.2') };
}

describe('interpreter version probes', () => {
  it('never run a Node other than the host\'s own without a sandbox: it gets the loader hook and no version', async () => {
    const mark = join(dir, 'unsandboxed-mark');
    const node = await markingNode(join(dir, 'unsandboxed'), mark);
    expect(await probeNodeMainLoading(node)).toBe('loader_hook');
    expect(await nodeVersionOf(node, undefined)).toBeUndefined();
    expect(existsSync(mark)).toBe(false);
  });

  it("read the host's own Node from this process, without asking anything", async () => {
    const { probe, asked } = recordingProbe();
    expect(await nodeVersionOf(process.execPath, probe)).toBe(process.versions.node);
    expect(await probeNodeMainLoading(process.execPath, probe)).toBe(nodeMainLoadingFor(process.version));
    expect(asked).toEqual([]);
  });

  it('never ask a file not named like Node, even in the sandbox (a package\'s node link to another program)', async () => {
    const named = join(dir, 'named');
    await mkdir(named);
    await copyFile(process.execPath, join(named, 'not-an-interpreter'));
    await symlink(process.execPath, join(named, 'linked-program'));
    const { probe, asked } = recordingProbe();
    expect(await probeNodeMainLoading(join(named, 'not-an-interpreter'), probe)).toBe('loader_hook');
    expect(await nodeVersionOf(join(named, 'linked-program'), probe)).toBeUndefined();
    expect(asked).toEqual([]);
  });

  it('run nothing under a spawner of the unsandboxed dev mode', async () => {
    const mark = join(dir, 'dev-mark');
    const node = await markingNode(join(dir, 'dev'), mark);
    const spawner = (await SandboxSpawner.create({ dangerouslyRunUnsandboxed: true, profileKind: 'dev' }))._unsafeUnwrap();
    expect(await nodeVersionOf(node, confinedInterpreterVersion({ spawner }))).toBeUndefined();
    const python = await markingProgram(join(dir, 'dev'), 'python3', SYSTEM_PYTHON, mark);
    expect(await interpreterVersionOf(python, 'python', confinedInterpreterVersion({ spawner }))).toBeUndefined();
    expect(existsSync(mark)).toBe(false);
  });

  it("read a bundle's runtime from a file of its kind only, and the host's Node through a link without asking", async () => {
    const links = join(dir, 'links');
    await mkdir(links);
    await symlink(process.execPath, join(links, 'node'));
    // A command named python3 whose file is another program (here the host's Node): what runs is what the link points at.
    await symlink(process.execPath, join(links, 'python3'));
    const { probe, asked } = recordingProbe();
    expect(await interpreterVersionOf(join(links, 'node'), 'node', probe)).toBe(process.versions.node);
    expect(await interpreterVersionOf(join(links, 'python3'), 'python', probe)).toBeUndefined();
    expect(await interpreterVersionOf(join(links, 'absent'), 'node', probe)).toBeUndefined();
    expect(asked).toEqual([]);
  });
});

describe.each(LINUX_BACKENDS)('the version probe in the sandbox (%s)', (backend) => {
  let spawner: SandboxSpawner;
  let scratchParent: string;
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ backend }))._unsafeUnwrap();
    scratchParent = join(dir, `${backend}-scratch`);
    await mkdir(scratchParent);
  }, 60_000);

  it('answers what the interpreter prints, and the interpreter leaves no mark on the host', { timeout: 60_000 }, async () => {
    const mark = join(dir, `${backend}-mark`);
    const node = await markingNode(join(dir, `${backend}-answers`), mark);
    const probe = confinedInterpreterVersion({ spawner, scratchParent });
    // Only the program itself can say this: it is not the host's Node, which would be read without running anything.
    expect(await nodeVersionOf(node, probe)).toBe(process.versions.node);
    expect(await probeNodeMainLoading(node, probe)).toBe(nodeMainLoadingFor(process.version));
    expect(existsSync(mark)).toBe(false);
    // Its scratch directory is gone.
    expect(await readdir(scratchParent)).toEqual([]);
  });

  it('answers what a Python 3 prints, in its own form, and it leaves no mark on the host', { timeout: 60_000 }, async () => {
    const mark = join(dir, `${backend}-python-mark`);
    const python = await markingProgram(join(dir, `${backend}-python`), 'python3', SYSTEM_PYTHON, mark);
    const probe = confinedInterpreterVersion({ spawner, scratchParent });
    const version = systemPythonVersion();
    expect(version).toMatch(/^3\.\d+\.\d+$/);
    expect(await interpreterVersionOf(python, 'python', probe)).toBe(version);
    // A Python's answer is not read as a Node's: asked as a bundle's node, a file named python3 is not run.
    expect(await interpreterVersionOf(python, 'node', probe)).toBeUndefined();
    expect(existsSync(mark)).toBe(false);
    expect(await readdir(scratchParent)).toEqual([]);
  });

  it('reads no answer past its output bound or its time bound', { timeout: 60_000 }, async () => {
    const mark = join(dir, `${backend}-bounds-mark`);
    // Read whole, its answer would pass for a version: a version followed by blank lines.
    const padded = await markingNode(join(dir, `${backend}-pads`), mark, 'pads_its_answer');
    const stuck = await markingNode(join(dir, `${backend}-stuck`), mark, 'never_exits');
    expect(await nodeVersionOf(padded, confinedInterpreterVersion({ spawner, scratchParent }))).toBeUndefined();
    expect(await nodeVersionOf(stuck, confinedInterpreterVersion({ spawner, scratchParent, timeoutMs: 1_000 }))).toBeUndefined();
    expect(existsSync(mark)).toBe(false);
    expect(await readdir(scratchParent)).toEqual([]);
  });
});
