/**
 * ExecutableBinding benchmarks: streamed SHA-256 against an in-memory digest
 * of the same bytes; the cost of the verified copy at a real spawn against
 * executing the installed file's descriptor directly; and the interpreter
 * pin's identity check against a full re-hash of Node.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindExecutable, verifyExecutableBinding } from '../src/binding/ExecutableBinding.js';
import { sha256OfHandle } from '../src/binding/sha256.js';
import { result, timeMs, type BenchResult } from './harness.js';

const MiB = 1 << 20;

function runChild(argv: readonly string[], fds: readonly number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'ignore', ...fds] });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

async function hashThroughput(dir: string): Promise<BenchResult[]> {
  const bytes = randomBytes(128 * MiB);
  const file = join(dir, 'blob');
  writeFileSync(file, bytes);
  const mbps = (ms: number): number => bytes.length / MiB / (ms / 1000);
  const streamed: number[] = [];
  const raw: number[] = [];
  const nodeStream: number[] = [];
  for (let i = 0; i < 10; i++) {
    raw.push(mbps(await timeMs(() => createHash('sha256').update(bytes).digest())));
    nodeStream.push(mbps(await timeMs(() => pipeline(createReadStream(file), createHash('sha256')))));
    streamed.push(
      mbps(
        await timeMs(async () => {
          const handle = await open(file, 'r');
          await sha256OfHandle(handle);
          await handle.close();
        }),
      ),
    );
  }
  // The first pair warms the page cache and the JIT.
  streamed.shift();
  raw.shift();
  nodeStream.shift();
  const r = result(
    {
      name: 'SHA-256 verification throughput (streamed from file, 1 MiB chunks)',
      baselineName: "Node's raw digest of the same bytes in memory",
      unit: 'MB/s',
      compare: 'ratio',
      target: 0.9,
      better: 'higher',
    },
    streamed,
    raw,
  );
  const versusStream = result(
    {
      name: 'SHA-256 verification throughput vs a default Node file stream',
      baselineName: 'fs.createReadStream (64 KiB chunks) piped into createHash',
      unit: 'MB/s',
      compare: 'ratio',
      target: 0.9,
      better: 'higher',
    },
    streamed,
    nodeStream,
  );
  return [
    { ...r, note: `128 MiB file, 9 paired runs after one warm-up; absolute ${r.value.toFixed(0)} MB/s (issue target ≥ 800 MB/s: ${r.value >= 800 ? 'met' : 'not met'}).` },
    versusStream,
  ];
}

/** A native program padded to `size` bytes (ELF ignores trailing bytes). */
function paddedProgram(root: string, size: number): void {
  mkdirSync(join(root, 'bin'), { recursive: true });
  const program = readFileSync('/usr/bin/true');
  writeFileSync(join(root, 'bin/tool'), Buffer.concat([program, Buffer.alloc(size - program.length)]), { mode: 0o755 });
}

async function spawnCost(dir: string, size: number): Promise<BenchResult> {
  const root = join(dir, `root-${size}`);
  paddedProgram(root, size);
  const record = (await bindExecutable({ installRoot: root, executable: 'bin/tool' }))._unsafeUnwrap();
  const copyDir = join(dir, 'exec');
  const viaCopy: number[] = [];
  const viaInstalledFd: number[] = [];
  for (let i = 0; i < 15; i++) {
    viaCopy.push(
      await timeMs(async () => {
        const exe = (await verifyExecutableBinding(record, { copyDir }))._unsafeUnwrap();
        await runChild(exe.argv, exe.inheritFds).finally(() => exe.release());
      }),
    );
    // Alternative design: hash the installed file through its descriptor and exec that descriptor
    // (no copy; closes the rename window but not an in-place rewrite).
    viaInstalledFd.push(
      await timeMs(async () => {
        const handle = await open(join(root, 'bin/tool'), 'r');
        await sha256OfHandle(handle);
        await runChild(['/proc/self/fd/3'], [handle.fd]).finally(() => handle.close());
      }),
    );
  }
  return result(
    {
      name: `verify + spawn a ${size >= MiB ? `${size / MiB} MiB` : `${size / 1024} KiB`} native plugin through the verified copy`,
      baselineName: 'hash + exec of the installed file descriptor (no copy)',
      unit: 'ms',
      compare: 'ratio',
      target: size > 4 * MiB ? 3 : 1.5,
      better: 'lower',
      note: 'Design measurement (no issue target): the copy is what closes the in-place-rewrite window; the target is our budget for it.',
    },
    viaCopy,
    viaInstalledFd,
  );
}

async function interpreterPin(dir: string): Promise<BenchResult> {
  const root = join(dir, 'node-plugin');
  mkdirSync(join(root, 'bin'), { recursive: true });
  writeFileSync(join(root, 'bin/main.mjs'), "#!/usr/bin/env node\nconsole.log('hi');\n", { mode: 0o755 });
  const record = (await bindExecutable({ installRoot: root, executable: 'bin/main.mjs', searchPath: '/usr/bin' }))._unsafeUnwrap();
  const copyDir = join(dir, 'exec');
  const pinned: number[] = [];
  const rehash: number[] = [];
  for (let i = 0; i < 7; i++) {
    pinned.push(await timeMs(async () => (await verifyExecutableBinding(record, { copyDir }))._unsafeUnwrap().release()));
    rehash.push(
      await timeMs(async () => {
        const handle = await open(record.interpreter!.path, 'r');
        await sha256OfHandle(handle);
        await handle.close();
      }),
    );
  }
  return result(
    {
      name: 'verify a Node script binding (interpreter pinned by identity, re-hashed only on change)',
      baselineName: `full SHA-256 of the Node binary (${(readFileSync(record.interpreter!.path).length / MiB).toFixed(0)} MiB)`,
      unit: 'ms',
      compare: 'ratio',
      target: 0.2,
      better: 'lower',
      note: 'Design measurement (no issue target): why the interpreter is pinned by identity plus digest instead of re-hashed at every spawn.',
    },
    pinned,
    rehash,
  );
}

/** Runs the binding benchmarks. */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-binding-'));
  try {
    return [...(await hashThroughput(dir)), await spawnCost(dir, 64 * 1024), await spawnCost(dir, 32 * MiB), await interpreterPin(dir)];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
