/**
 * ExecutableBinding benchmarks: streamed SHA-256 against an in-memory digest
 * of the same bytes; the cost of the verified copy at a real spawn against
 * executing the installed file's descriptor directly; and the interpreter
 * pin's identity check against a full re-hash of Node; the package tree
 * pin's check of an unchanged tree against re-hashing it, and that re-hash's
 * throughput against plain Node reads.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindExecutable, verifyExecutableBinding } from '../src/binding/ExecutableBinding.js';
import { startSweepWorkers } from '../src/binding/identitySweep.js';
import { forgetPackageTrees, PACKAGE_TREE_LIST_NAME, packageTreesSettled, pinPackageTree, releasePackageTreeDescriptors, verifyPackageTree, type PackageTreePin } from '../src/binding/packageTree.js';
import { sha256OfHandle } from '../src/binding/sha256.js';
import { unverifiedCommand } from '../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../src/sandbox/SandboxSpawner.js';
import { median, percentile, result, timeMs, type BenchResult } from './harness.js';

const MiB = 1 << 20;
/** Measured rounds of the spawn latency row (each spawns the gated, the ungated and the sequential side once). */
const SPAWN_LATENCY_ROUNDS = 30;

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
  const sides: ReadonlyArray<readonly [number[], () => Promise<unknown> | unknown]> = [
    [raw, () => createHash('sha256').update(bytes).digest()],
    [nodeStream, () => pipeline(createReadStream(file), createHash('sha256'))],
    [
      streamed,
      async () => {
        const handle = await open(file, 'r');
        await sha256OfHandle(handle);
        await handle.close();
      },
    ],
  ];
  for (let i = 0; i < 10; i++) {
    // Rotate which side goes first, so none always runs on the cache state another left.
    for (let k = 0; k < sides.length; k++) {
      const [into, fn] = sides[(i + k) % sides.length]!;
      into.push(mbps(await timeMs(fn)));
    }
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
      absolute: { target: 800, better: 'higher' },
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
      role: 'design',
      note: 'Design note: the baseline reads in 64 KiB chunks, a weaker reader than ours by construction; it shows why 1 MiB chunks are used.',
    },
    streamed,
    nodeStream,
  );
  return [
    { ...r, note: '128 MiB file, 9 runs of each side after one warm-up, the order rotated each run; the issue target is ≥ 800 MB/s on the figure itself, beside the ratio.' },
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
      role: 'design',
      note: 'Design note (no issue target): the baseline re-hashes the whole interpreter, which the pinned side skips by design; it shows why the interpreter is pinned by identity plus digest instead of re-hashed at every spawn.',
    },
    pinned,
    rehash,
  );
}

/** Writes a package of `files` files of `bytes` bytes in all: 250 directories under node_modules, 20 files each. */
function writeTree(root: string, files: number, bytes: number): void {
  const perDirectory = 20;
  const size = Math.floor(bytes / files);
  for (let i = 0; i < files; i++) {
    const dir = join(root, 'node_modules', `dep-${Math.floor(i / perDirectory)}`, 'lib');
    if (i % perDirectory === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `module-${i % perDirectory}.js`), randomBytes(size));
  }
}

/** Every file of the tree, in walk order, for the baselines. */
function listTree(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === PACKAGE_TREE_LIST_NAME) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) listTree(path, out);
    else out.push(path);
  }
  return out;
}

/**
 * The package tree pin at spawn: an unchanged 5,000-file, 20 MB tree checked
 * by stat identity, against re-hashing the whole tree (what the check costs
 * when every identity moved, e.g. after a restore); and that full re-hash's
 * throughput against reading and hashing the same files with plain Node.
 */
async function packageTree(dir: string): Promise<BenchResult[]> {
  const root = join(dir, 'tree');
  const files = 5_000;
  const totalBytes = 20 * MiB;
  writeTree(root, files, totalBytes);
  const pin = (await pinPackageTree(root))._unsafeUnwrap();
  // A host that has checked one large tree has its sweep workers running; the first check in a process starts them.
  const sweepWorkers = await startSweepWorkers();
  const paths = listTree(root);
  // Rewrites every timestamp (to the same value): every ctime moves, so a check that forgot its identities must re-hash everything.
  const moveEveryCtime = (): void => {
    for (const path of paths) {
      const s = statSync(path);
      utimesSync(path, s.atime, s.mtime);
    }
  };
  const check = async (): Promise<void> => void (await verifyPackageTree(root, pin))._unsafeUnwrap();
  const unchanged: number[] = [];
  const rehash: number[] = [];
  const rehashByPath: number[] = [];
  const plainRead: number[] = [];
  const inMemory: number[] = [];
  const firstCheck: number[] = [];
  const takeDescriptors: number[] = [];
  const contents = paths.map((p) => readFileSync(p));
  const readAndHash = (): void => paths.forEach((p) => createHash('sha256').update(readFileSync(p)).digest('hex'));
  for (let i = 0; i < 12; i++) {
    // Both sides of the throughput row read files whose inodes were just dirtied (the kernel writes them back meanwhile),
    // in alternating order: measured right after the ctime moves while the baseline was not, the re-hash lost a third.
    // The host already holds the parsed list (it is read once per process); every identity has moved.
    const sides = [
      async () => {
        moveEveryCtime();
        rehash.push(await timeMs(check));
        await packageTreesSettled();
        unchanged.push(await timeMs(check));
      },
      async () => {
        moveEveryCtime();
        plainRead.push(await timeMs(readAndHash));
      },
      async () => {
        // No descriptor held (a process's first check, a tree over the descriptor budget): every file opened by its path.
        releasePackageTreeDescriptors();
        moveEveryCtime();
        rehashByPath.push(await timeMs(check));
        // The host takes its descriptors again after the check, between spawns.
        await packageTreesSettled();
      },
    ];
    // Rotated, so that no side always runs on the cache state another left.
    for (let k = 0; k < sides.length; k++) await sides[(i + k) % sides.length]!();
    inMemory.push(await timeMs(() => contents.forEach((c) => createHash('sha256').update(c).digest('hex'))));
  }
  for (const runs of [unchanged, rehash, rehashByPath, plainRead, inMemory]) runs.splice(0, 2);
  // Pinned afresh, so that the identities in the list hold: a host process's first check of an unchanged tree.
  rmSync(join(root, PACKAGE_TREE_LIST_NAME));
  const repinned = (await pinPackageTree(root))._unsafeUnwrap();
  for (let i = 0; i < 5; i++) {
    forgetPackageTrees();
    firstCheck.push(await timeMs(async () => void (await verifyPackageTree(root, repinned))._unsafeUnwrap()));
    takeDescriptors.push(await timeMs(packageTreesSettled));
  }
  const mbps = (ms: number): number => pin.bytes / MiB / (ms / 1000);
  const spawnCheck = result(
    {
      name: 'verify a 5,000-file, 20 MB package tree at spawn, unchanged (stat identities)',
      baselineName: 'full re-hash of the same tree (every ctime moved, list already parsed)',
      unit: 'ms',
      // The issue asks ≤ 5 ms absolute or ≤ 0.1× a full re-hash: the figure itself is checked, the ratios are in the note.
      compare: 'absolute',
      target: 5,
      better: 'lower',
    },
    unchanged,
    rehash,
  );
  const toRehashByPath = spawnCheck.value / median(rehashByPath);
  const throughput = result(
    {
      name: 'package tree full re-hash throughput',
      baselineName: 'readFileSync + createHash of each file from a ready list of paths (ctimes moved before each side too)',
      unit: 'MB/s',
      compare: 'ratio',
      target: 0.8,
      better: 'higher',
    },
    rehash.map(mbps),
    plainRead.map(mbps),
  );
  const memoryMbps = median(inMemory.map(mbps));
  const latency = await spawnLatency(dir, root, repinned);
  return [
    {
      ...spawnCheck,
      note: `10 paired runs after two warm-ups; issue target ≤ 5 ms absolute or ≤ 0.1× a full re-hash, checked on the figure: ${(spawnCheck.value / spawnCheck.baseline).toFixed(3)}× the re-hash through held descriptors (the baseline shown), ${toRehashByPath.toFixed(3)}× the re-hash by path (${median(rehashByPath).toFixed(1)} ms). One synchronous number-mode fstat per file, through a descriptor the host opened on it after the previous check passed (an lstat walks the file's path, which costs about as much again here), and an lstat per directory (about 5,250 calls), swept by the host's thread and ${sweepWorkers ? 'worker threads' : 'no worker thread (none could start)'} claiming 64-entry chunks (src/binding/identitySweep.ts); measured once the descriptor work of the check before had finished; the re-hash baseline hashes on the host's thread. At spawn the check also overlaps the sandbox setup (see the spawn latency row). The first check in a process also reads and parses the 850 KB list and sweeps by lstat: ${median(firstCheck).toFixed(1)} ms in all; opening the 5,000 descriptors after it, in slices beside the spawn: ${median(takeDescriptors).toFixed(1)} ms.`,
    },
    {
      ...throughput,
      note: `10 paired runs after two warm-ups, ctimes moved before each side, order rotated; both sides on the host's thread alone. The re-hash reads each file through the descriptor the host took on it after the previous check (one fstat and positional reads from offset 0, with O_NOATIME; no open, no close, and the descriptor stays held), which its unchanged directory and mount table vouch still names the file at its path; the baseline opens, stats, reads and closes each file. With no descriptor held (a process's first check, a copied or restored tree, a tree over the descriptor budget) each file is opened by its path and hashed on the host's thread and ${sweepWorkers ? 'the sweep\'s worker threads' : 'no worker thread (none could start)'} together, each claiming 16-file chunks (parallel hashing, against the one-thread baseline): ${median(rehashByPath.map(mbps)).toFixed(0)} MB/s, ${(median(rehashByPath.map(mbps)) / median(plainRead.map(mbps))).toFixed(2)}× the baseline. Against hashing the same bytes already in memory (${memoryMbps.toFixed(0)} MB/s) the ratio is ${(throughput.value / memoryMbps).toFixed(2)}: with 4 KiB files the cost is the system calls per file, not SHA-256.`,
    },
    latency,
  ];
}

/**
 * What the tree check adds to a sandboxed spawn: the sandbox backend sets the
 * sandbox up (control group join, rlimits, namespaces, mounts) while the host checks
 * the unchanged 5,000-file tree, and runs the plugin (`/bin/true`) once the
 * check passed; against the same spawn without a check, and (for the note)
 * the check run before the spawn.
 */
async function spawnLatency(dir: string, root: string, pin: PackageTreePin): Promise<BenchResult> {
  const spawner = (await SandboxSpawner.create({ homeDir: join(dir, 'home') }))._unsafeUnwrap();
  const writeDir = join(dir, 'spawn-data');
  mkdirSync(writeDir, { recursive: true });
  const treeCheck = () => verifyPackageTree(root, pin).map(() => undefined);
  const spawnAndWait = async (gate?: typeof treeCheck): Promise<void> => {
    const p = (await spawner.spawn({ executable: unverifiedCommand(['/bin/true'], root), env: {}, network: false, writeDir, hiddenPaths: [], ...(gate ? { gate } : {}) }))._unsafeUnwrap();
    await p.exited;
  };
  const gated: number[] = [];
  const ungated: number[] = [];
  const sequential: number[] = [];
  const sides: ReadonlyArray<readonly [number[], () => Promise<void>]> = [
    [gated, () => spawnAndWait(treeCheck)],
    [ungated, () => spawnAndWait()],
    [
      sequential,
      async () => {
        (await treeCheck())._unsafeUnwrap();
        await spawnAndWait();
      },
    ],
  ];
  for (let i = 0; i < SPAWN_LATENCY_ROUNDS + 2; i++) {
    // Rotate which side goes first.
    for (let k = 0; k < sides.length; k++) {
      const [into, fn] = sides[(i + k) % sides.length]!;
      into.push(await timeMs(fn));
    }
  }
  for (const runs of [gated, ungated, sequential]) runs.splice(0, 2);
  // Each round spawns both sides within milliseconds: load that changes between rounds moves both alike.
  const pairs = gated.map((ms, round) => ms - ungated[round]!);
  const r = result(
    {
      name: 'spawn latency added by the tree check of an unchanged 5,000-file, 20 MB package (checked while the sandbox is set up)',
      baselineName: 'the same sandboxed spawn of /bin/true without a tree check',
      unit: 'ms',
      compare: 'difference',
      target: 5,
      better: 'lower',
    },
    gated,
    ungated,
  );
  return {
    ...r,
    pairedDifference: median(pairs),
    note: `${SPAWN_LATENCY_ROUNDS} rounds after two warm-ups, each spawning every side once, order rotated; spawn until the plugin exited; the comparison is the median of the per-round differences (quartiles ${percentile(pairs, 25).toFixed(1)} to ${percentile(pairs, 75).toFixed(1)} ms; the difference of the two medians: ${(r.value - r.baseline).toFixed(1)} ms; 15 rounds and the difference of the medians before issue 18's last round). The check starts before the launcher is forked: the worker thread sweeps while the host's thread lays the sandbox out (during the fork itself it barely advances, docs/performance.md "Checking an installed tree"). The check run before the spawn instead (the design before the gate): ${median(sequential).toFixed(1)} ms, +${(median(sequential) - r.baseline).toFixed(1)} ms. Target: the issue's 5 ms, applied to what a spawn pays.`,
  };
}

/** Runs the binding benchmarks. */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-binding-'));
  try {
    return [...(await hashThroughput(dir)), await spawnCost(dir, 64 * 1024), await spawnCost(dir, 32 * MiB), await interpreterPin(dir), ...(await packageTree(dir))];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
