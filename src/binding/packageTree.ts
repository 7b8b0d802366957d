/**
 * Package tree pins: every file and directory of an installed package, not
 * only the file the host starts, pinned at install and checked before every
 * spawn.
 *
 * At install, {@link pinPackageTree} walks the install root, hashes every
 * file and writes the list (path, mode, size, SHA-256 and the stat identity
 * of each file, and each directory with its identity) into the install root
 * under {@link PACKAGE_TREE_LIST_NAME}, a name no package entry can have (a
 * `:` is refused in entry names). The lock row pins the list by its SHA-256.
 *
 * Before a spawn, {@link verifyPackageTree} compares the tree with the list.
 * A file whose stat identity (device, inode, size, mtime, ctime) is the one
 * recorded is taken as unchanged without reading it: nobody but root can
 * set a ctime back, and every write, rename, link or mode change moves it.
 * A directory whose identity is unchanged has the same entries, for the same
 * reason; one whose identity moved is listed again to find added or removed
 * entries. Any file whose identity moved is hashed again. The check compares
 * identities as Node's number stats give them (about 10 % cheaper than
 * bigint stats): times in milliseconds with a fraction exact to a fraction of
 * a microsecond, far below the clock tick that stamps them; an entry whose
 * device or inode number does not fit a double exactly is never vouched for
 * by its identity, only by its bytes. Identities found
 * to hold the pinned bytes are remembered for the life of the process, so a
 * tree that was copied or restored (new inodes) is hashed once, not at every
 * spawn. The status of every entry is swept by the host's thread and
 * worker threads together (see identitySweep.ts); what the sweep flags is
 * checked again here, in list order. After a check passed, the host opens a
 * descriptor on each file of the tree (within a budget of the process's
 * open-file limit, etc/package-tree.json) and the next sweep takes those
 * files' status with `fstat`, which skips the path walk; a file whose
 * identity moved is re-hashed through its descriptor (reads by position,
 * no open or close), which stays held. A descriptor
 * vouches for the inode it names, not for the path: a file is cleared by it
 * only while its directory's identity is unchanged (any entry added,
 * removed or renamed in a directory moves that identity, and directories
 * are always looked at by path) and the process's mount table is the one
 * read before the descriptors were taken (a mount over a file moves no
 * directory's identity), otherwise the file is checked by its path
 * again, and a mismatch is always refused from that check. Files are read
 * with `O_NOATIME` where the kernel allows it. The system calls are
 * synchronous (they are several times cheaper than their promise forms)
 * and run in slices between which the event loop gets its turn.
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, readdirSync, readFileSync, readSync, writeSync, type BigIntStats, type Stats } from 'node:fs';
import packageTreeDefaults from '../../etc/package-tree.json' with { type: 'json' };
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { openInsideRoot } from './safeOpen.js';
import { digestsEqual, isSha256Hex, sha256OfHandle } from './sha256.js';
import { errnoOf, ioError } from '../errors/ioError.js';
import { untrusted } from './untrusted.js';
import {
  createIdentityTable,
  hashByPath,
  recordDigest,
  recordIdentity,
  releaseIdentityTable,
  sweepIdentities,
  SWEEP_IDENTITY_MOVED,
  SWEEP_UNCHANGED,
  TREE_OPEN_FLAGS,
  TREE_OPEN_FLAGS_NO_ATIME,
  type IdentityTable,
  type RecordedIdentity,
} from './identitySweep.js';

/** The name of the file list inside an install root. The `:` keeps it apart from every package entry. */
export const PACKAGE_TREE_LIST_NAME = '.mcp-plugin-host:files';

/** What the lock row records about a package tree. */
export interface PackageTreePin {
  /** SHA-256 (lower-case hex) of the file list at `<install_root>/.mcp-plugin-host:files`. */
  readonly sha256: string;
  /** How many files the list pins (the list itself not counted). */
  readonly files: number;
  /** How many bytes those files hold together. */
  readonly bytes: number;
}

const LIST_HEADER = 'mcp-plugin-host package tree 1';
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const READ_CHUNK_BYTES = 1 << 20;
/** Stat calls between two turns of the event loop (a few milliseconds of work). */
const STATS_PER_SLICE = 2048;
/** Files looked at before a check chooses its way: all of them moved (a copied or restored tree) means re-hash everything without a sweep. */
const RESTORE_PROBE_FILES = 16;
/** Bytes hashed between two turns of the event loop. */
const BYTES_PER_SLICE = 16 << 20;
/** Parsed lists kept per process (a 5,000-file list takes about a megabyte); a host with more plugins parses a list again at a spawn. */
const MAX_CACHED_TREES = 64;

/** The stat identity of a file or directory, as a number-mode `lstat` gives it (the list records nanoseconds). */
interface Identity {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  /** `NaN` where the device or inode number is not exact in a double: such an identity never matches. */
  readonly ctimeMs: number;
}

interface TreeFile {
  /** Its entry in the tree's identity table. */
  readonly index: number;
  /** The index of its directory. */
  readonly parent: number;
  readonly path: string;
  readonly mode: number;
  readonly size: number;
  readonly sha256: string;
  /** The same digest as bytes, compared with each re-hash without hex conversions. */
  readonly digest: Buffer;
  /** The identity last seen holding the pinned bytes. */
  known: Identity;
}

interface TreeDirectory {
  readonly index: number;
  readonly path: string;
  readonly mode: number;
  /** Entry names, the list's own file excluded. */
  readonly children: ReadonlySet<string>;
  known: Identity;
}

/** A parsed list: directories parent first, then files. */
interface Tree {
  readonly directories: readonly TreeDirectory[];
  readonly files: readonly TreeFile[];
  /** The same entries (directories, then files) with the identities last seen, for the sweep. */
  readonly table: IdentityTable;
  /** Descriptors held open on its files (see {@link holdDescriptors}). */
  held: number;
  /**
   * Per entry ({@link HELD_FIELDS} numbers), the device, inode and birth
   * time a held descriptor named when it was opened: a descriptor whose
   * number names another file now was closed by the embedding application,
   * and its number is that application's. The birth time tells a file that
   * took a freed inode's number apart from the one held (where the file
   * system records none it is 0 on both sides), and unlike the change time
   * it stays put when the held file is written or its mode changes.
   */
  readonly heldAs: Float64Array;
  /** Checks of this tree in progress: its descriptors are not closed meanwhile. */
  checking: number;
  /**
   * The mount table when its descriptors were taken: a mount placed over a
   * file later moves no directory's identity, so its descriptors vouch for
   * their paths only while the table is this one.
   */
  mounts: string | undefined;
}

/** What happened to one path of a tree. */
export type TreeChange = 'changed' | 'added' | 'removed';

/** The outcome of a tree check that found the tree intact. */
export interface PackageTreeCheck {
  /** Files checked by identity alone. */
  readonly unchanged: number;
  /** Files hashed again because their identity moved (and found to hold the pinned bytes). */
  readonly rehashed: number;
}

/** A ctime that no status equals, for identities that cannot be compared exactly in numbers. */
const unmatchable = (dev: number, ino: number, ctimeMs: number): number => (Number.isSafeInteger(dev) && Number.isSafeInteger(ino) ? ctimeMs : NaN);

const identityOf = (s: Stats): Identity => ({ dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, ctimeMs: unmatchable(s.dev, s.ino, s.ctimeMs) });

const sameIdentity = (a: Identity, s: Stats): boolean =>
  a.ctimeMs === s.ctimeMs && a.ino === s.ino && a.mtimeMs === s.mtimeMs && a.size === s.size && a.dev === s.dev;

const modeOf = (s: BigIntStats): number => Number(s.mode & 0o7777n);

const permissionsOf = (s: Stats): number => s.mode & 0o7777;

const join = (root: string, relative: string): string => (relative === '.' ? root : `${root}/${relative}`);


/** A thrown refusal, caught at the entry points: the walks are plain loops over synchronous calls. */
class Refusal extends Error {
  constructor(readonly error: HostError) {
    super(error.message);
  }
}

/** A file or directory of the tree that is not what was pinned. */
function treeChange(root: string, relative: string, change: TreeChange, what: string, facts: Record<string, unknown> = {}): Refusal {
  const reason = change === 'changed' ? 'file_changed' : change === 'added' ? 'file_added' : 'file_removed';
  const path = join(root, relative);
  return new Refusal(
    untrusted(reason, `${relative === '.' ? `The install root ${root}` : `${relative} in the install root ${root}`} ${what} since install; install the plugin again to trust its files as they are now.`, {
      path,
      file: relative,
      change,
      install_root: root,
      ...facts,
    }),
  );
}

/** Opens a file of a tree for reading without following a final link, with `O_NOATIME` where the kernel allows it. */
function openForReading(path: string): number {
  try {
    return openSync(path, TREE_OPEN_FLAGS_NO_ATIME);
  } catch (e) {
    if (errnoOf(e) !== 'EPERM') throw e;
    // Not the file's owner: its access time moves, nothing else changes.
    return openSync(path, TREE_OPEN_FLAGS);
  }
}

let readBuffer: Buffer | undefined;

/**
 * The SHA-256 of everything readable from `fd`, read from offset 0 by
 * position: a held descriptor is read again without seeking, and the
 * descriptor's own offset is never used. Synchronous, so one read buffer
 * serves every caller.
 */
function hashDescriptor(fd: number): Buffer {
  readBuffer ??= Buffer.allocUnsafe(READ_CHUNK_BYTES);
  const buffer = readBuffer;
  const hash = createHash('sha256');
  for (let position = 0; ; ) {
    const n = readSync(fd, buffer, 0, buffer.length, position);
    hash.update(buffer.subarray(0, n));
    // A regular file reads short only at its end: one read for a file smaller than the buffer.
    if (n < buffer.length) break;
    position += n;
  }
  return hash.digest();
}

/** A file whose bytes were hashed as they were written: the digest, and its status after the last write and mode change. */
export interface WrittenFile {
  readonly digest: Buffer;
  readonly stat: BigIntStats;
}

/** Files hashed while they were written (by whoever created the tree), keyed by {@link identityKey}. */
export type HashedWhileWritten = ReadonlyMap<string, WrittenFile>;

/** The key of a file in {@link HashedWhileWritten}: its device and inode. */
export const identityKey = (stat: Pick<BigIntStats, 'dev' | 'ino'>): string => `${stat.dev}:${stat.ino}`;

/**
 * The digest recorded when the file was written, when its status is still
 * the one taken then: every write or mode change since would have moved its
 * ctime (the same reasoning that lets an unchanged identity vouch for a file
 * at spawn).
 */
function digestWhileWritten(written: HashedWhileWritten | undefined, s: BigIntStats): Buffer | undefined {
  const known = written?.get(identityKey(s));
  if (known === undefined) return undefined;
  const k = known.stat;
  const same = k.ctimeNs === s.ctimeNs && k.mtimeNs === s.mtimeNs && k.size === s.size && k.mode === s.mode && k.ino === s.ino && k.dev === s.dev;
  return same ? known.digest : undefined;
}

/** A file hashed at pin time: its digest and the status of the descriptor it was read from. */
interface Hashed {
  readonly digest: Buffer;
  readonly stat: BigIntStats;
}

/** Reads and hashes one file by descriptor, checking it is the regular file `seen` described. */
function hashFile(path: string, seen: BigIntStats): Hashed {
  const fd = openForReading(path);
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile() || stat.dev !== seen.dev || stat.ino !== seen.ino) {
      throw Object.assign(new Error(`${path} was replaced while it was read`), { code: 'ECHANGED' });
    }
    return { digest: hashDescriptor(fd), stat };
  } finally {
    closeSync(fd);
  }
}

/**
 * Counts the work of a walk: `due` says when the event loop's turn has come
 * (every `STATS_PER_SLICE` calls or `BYTES_PER_SLICE` bytes). The caller
 * awaits only then, since an `await` per file would cost more than its `lstat`.
 */
class Slicer {
  #calls = 0;
  #bytes = 0;

  due(bytes = 0): boolean {
    this.#calls++;
    this.#bytes += bytes;
    if (this.#calls < STATS_PER_SLICE && this.#bytes < BYTES_PER_SLICE) return false;
    this.#calls = 0;
    this.#bytes = 0;
    return true;
  }
}

function listLine(fields: readonly (string | number | bigint)[], path: string): string {
  return `${fields.join(' ')} ${path}\n`;
}

async function walkForPin(root: string, written: HashedWhileWritten | undefined): Promise<{ lines: string[]; files: number; bytes: number }> {
  const lines: string[] = [];
  const slicer = new Slicer();
  let files = 0;
  let bytes = 0;
  const fileLines: string[] = [];
  const visit = async (relative: string): Promise<void> => {
    const abs = join(root, relative);
    const stat = lstatSync(abs, { bigint: true });
    if (!stat.isDirectory()) throw new Refusal(untrusted('not_regular_file', `${abs} is not a directory.`, { path: abs }));
    lines.push(listLine(['d', modeOf(stat).toString(8), stat.dev, stat.ino, stat.mtimeNs, stat.ctimeNs], relative));
    const names = readdirSync(abs).sort();
    const subdirectories: string[] = [];
    for (const name of names) {
      if (relative === '.' && name === PACKAGE_TREE_LIST_NAME) continue;
      const child = relative === '.' ? name : `${relative}/${name}`;
      if (/[\n\r]/.test(name)) throw new Refusal(untrusted('invalid_path', `${join(root, child)} has a line break in its name.`, { path: join(root, child) }));
      const childPath = join(root, child);
      const s = lstatSync(childPath, { bigint: true });
      if (s.isDirectory()) {
        subdirectories.push(child);
      } else if (s.isFile()) {
        const recorded = digestWhileWritten(written, s);
        const hashed = recorded === undefined ? hashFile(childPath, s) : { digest: recorded, stat: s };
        const st = hashed.stat;
        fileLines.push(listLine(['f', modeOf(st).toString(8), st.size, hashed.digest.toString('hex'), st.dev, st.ino, st.mtimeNs, st.ctimeNs], child));
        files++;
        bytes += Number(st.size);
        if (slicer.due(Number(st.size))) await nextTurn();
      } else {
        const reason = s.isSymbolicLink() ? 'link' : 'not_regular_file';
        throw new Refusal(untrusted(reason, `${childPath} is a link or special file; an install root holds only files and directories.`, { path: childPath }));
      }
    }
    for (const sub of subdirectories) await visit(sub);
  };
  await visit('.');
  return { lines: [`${LIST_HEADER}\n`, ...lines, ...fileLines], files, bytes };
}

async function pin(installRoot: string, hashedWhileWritten: HashedWhileWritten | undefined): Promise<Result<PackageTreePin, HostError>> {
  const listPath = `${installRoot}/${PACKAGE_TREE_LIST_NAME}`;
  let fd: number;
  try {
    // Created before the walk, so that the root's identity the list records is the final one.
    fd = openSync(listPath, CREATE_FLAGS, 0o644);
  } catch (e) {
    return err(ioError('Creating', listPath, e));
  }
  try {
    const walked = await walkForPin(installRoot, hashedWhileWritten);
    const text = Buffer.from(walked.lines.join(''), 'utf8');
    let written = 0;
    while (written < text.length) written += writeSync(fd, text, written, text.length - written);
    // On disk before the lock row that pins it is published: a list lost to a crash would quarantine the plugin.
    fsyncSync(fd);
    const sha256 = createHash('sha256').update(text).digest('hex');
    return ok({ sha256, files: walked.files, bytes: walked.bytes });
  } catch (e) {
    if (e instanceof Refusal) return err(e.error);
    return err(ioError('Pinning the files of', installRoot, e));
  } finally {
    closeSync(fd);
  }
}

/**
 * Pins every file of a freshly installed package: hashes each file, writes
 * the list into the install root (`installRoot` must be a real path) and
 * returns what the lock row records. Refuses links and special files
 * (`PLUGIN_EXECUTABLE_UNTRUSTED`). Call it after the last change the
 * installer makes to the tree (e.g. the executable's mode). `written`:
 * files the installer hashed as it wrote them; one whose status is still
 * the recorded one keeps that digest instead of being read again.
 */
export function pinPackageTree(installRoot: string, written?: HashedWhileWritten): ResultAsync<PackageTreePin, HostError> {
  return new ResultAsync(pin(installRoot, written));
}

const cachedTrees = new Map<string, Tree>();

/** A time in nanoseconds as Node's number stats give it: seconds × 1e3 + nanoseconds / 1e6, in doubles, in that order. */
function milliseconds(ns: string): number {
  const total = BigInt(ns);
  return Number(total / 1_000_000_000n) * 1e3 + Number(total % 1_000_000_000n) / 1e6;
}

function parseIdentity(fields: readonly string[], at: number, size: number): Identity {
  // Parsed through BigInt: a number above 2^53 must not round to a neighbour that then looks exact.
  const dev = Number(BigInt(fields[at]!));
  const ino = Number(BigInt(fields[at + 1]!));
  const exact = BigInt(dev) === BigInt(fields[at]!) && BigInt(ino) === BigInt(fields[at + 1]!);
  return { dev, ino, size, mtimeMs: milliseconds(fields[at + 2]!), ctimeMs: exact ? milliseconds(fields[at + 3]!) : NaN };
}

/** A directory's size moves with its entries, which are compared by name instead: it is never part of its identity. */
const DIRECTORY_SIZE = -1;

const DECIMAL = /^[0-9]+$/;
const OCTAL_MODE = /^[0-7]{1,4}$/;

/**
 * Splits `count` space-separated fields off the front of a line (the rest is
 * the path); the first is an octal mode, the last four and those at
 * `decimals` are decimal numbers.
 */
function splitLine(line: string, count: number, decimals: readonly number[] = []): { fields: string[]; path: string } | undefined {
  const fields: string[] = [];
  let start = 0;
  for (let i = 0; i < count; i++) {
    const space = line.indexOf(' ', start);
    if (space < 0) return undefined;
    fields.push(line.slice(start, space));
    start = space + 1;
  }
  const numeric = [...decimals, count - 4, count - 3, count - 2, count - 1];
  if (!OCTAL_MODE.test(fields[0]!) || numeric.some((i) => !DECIMAL.test(fields[i]!))) return undefined;
  return { fields, path: line.slice(start) };
}

/** Parses a list whose digest was already checked; anything unexpected is `binding_inconsistent`. */
function parseList(text: string, root: string): Result<Tree, HostError> {
  const bad = (line: number): Result<Tree, HostError> =>
    err(untrusted('binding_inconsistent', `The file list of ${root} is malformed (line ${line}).`, { install_root: root, line }));
  const lines = text.split('\n');
  if (lines[0] !== LIST_HEADER || lines[lines.length - 1] !== '') return bad(1);
  const directories: TreeDirectory[] = [];
  const childrenOf = new Map<string, { readonly index: number; readonly children: Set<string> }>();
  const files: TreeFile[] = [];
  /** Adds `path` to its directory's children; returns the directory's index, -1 when it is not listed. */
  const addChild = (path: string): number => {
    const slash = path.lastIndexOf('/');
    const parent = childrenOf.get(slash < 0 ? '.' : path.slice(0, slash));
    if (parent === undefined) return -1;
    parent.children.add(path.slice(slash + 1));
    return parent.index;
  };
  for (let i = 1; i < lines.length - 1; i++) {
    const line = lines[i]!;
    // Directories come first (as the pin writes them): a file's index in the identity table follows the last directory's.
    if (line.startsWith('d ') && files.length === 0) {
      const split = splitLine(line.slice(2), 5);
      if (split === undefined) return bad(i + 1);
      const children = new Set<string>();
      if (split.path !== '.' && addChild(split.path) < 0) return bad(i + 1);
      childrenOf.set(split.path, { index: directories.length, children });
      const known = parseIdentity(split.fields, 1, DIRECTORY_SIZE);
      directories.push({ index: directories.length, path: split.path, mode: parseInt(split.fields[0]!, 8), children, known });
    } else if (line.startsWith('f ')) {
      const split = splitLine(line.slice(2), 7, [1]);
      const parent = split === undefined || !isSha256Hex(split.fields[2]!) ? -1 : addChild(split.path);
      if (split === undefined || parent < 0) return bad(i + 1);
      const [mode, size, sha256] = split.fields as [string, string, string];
      const known = parseIdentity(split.fields, 3, Number(size));
      const index = directories.length + files.length;
      files.push({ index, parent, path: split.path, mode: parseInt(mode, 8), size: known.size, sha256, digest: Buffer.from(sha256, 'hex'), known });
    } else {
      return bad(i + 1);
    }
  }
  if (directories[0]?.path !== '.') return bad(2);
  const table = createIdentityTable([...directories, ...files].map((entry) => join(root, entry.path)));
  for (const dir of directories) recordIdentity(table, dir.index, true, dir.mode, dir.known);
  for (const file of files) {
    recordIdentity(table, file.index, false, file.mode, file.known);
    recordDigest(table, file.index, file.digest);
  }
  return ok({ directories, files, table, held: 0, heldAs: new Float64Array(HELD_FIELDS * (directories.length + files.length)), checking: 0, mounts: undefined });
}

/** The parsed list of `root` from this process's cache, if there. */
function cachedTree(root: string, pin: PackageTreePin): Tree | undefined {
  const key = `${pin.sha256}\0${root}`;
  const cached = cachedTrees.get(key);
  if (cached !== undefined) {
    // Moved to the back: the list evicted first is the one used least recently.
    cachedTrees.delete(key);
    cachedTrees.set(key, cached);
  }
  return cached;
}

/** The parsed list of `root`, from this process's cache or read and checked against the pinned digest. */
async function loadTree(root: string, pin: PackageTreePin): Promise<Result<Tree, HostError>> {
  const cached = cachedTree(root, pin);
  if (cached !== undefined) return ok(cached);
  const key = `${pin.sha256}\0${root}`;
  const opened = await openInsideRoot(root, PACKAGE_TREE_LIST_NAME);
  if (opened.isErr()) return err(opened.error);
  const chunks: Buffer[] = [];
  let actual: string;
  try {
    actual = await sha256OfHandle(opened.value.handle, async (chunk) => void chunks.push(Buffer.from(chunk)));
  } catch (e) {
    return err(ioError('Reading', opened.value.path, e));
  } finally {
    await opened.value.handle.close().catch(() => undefined);
  }
  if (!digestsEqual(pin.sha256, actual)) {
    return err(
      untrusted('digest_mismatch', `The file list ${opened.value.path} changed since install (SHA-256 ${actual}, pinned ${pin.sha256}).`, {
        path: opened.value.path,
        expected_sha256: pin.sha256,
        actual_sha256: actual,
      }),
    );
  }
  const parsed = parseList(Buffer.concat(chunks).toString('utf8'), root);
  if (parsed.isErr()) return parsed;
  if (cachedTrees.size >= MAX_CACHED_TREES) {
    const [oldest, evicted] = cachedTrees.entries().next().value!;
    cachedTrees.delete(oldest);
    // A tree under check keeps its descriptors until its last check ends (then let go of on the descriptor chain).
    if (evicted.checking === 0) forgetTree(evicted);
  }
  cachedTrees.set(key, parsed.value);
  return parsed;
}

/**
 * What the pin of the install root `root` lists, the root itself left out:
 * `d <path>` for a directory, `f <path> <size> <sha256>` for a file. Read
 * from the root's file list once that list matches the pin, so these are the
 * bytes the install pinned whatever the files under `root` hold now.
 */
export function pinnedEntries(root: string, pin: PackageTreePin): ResultAsync<ReadonlySet<string>, HostError> {
  return new ResultAsync(loadTree(root, pin)).map(
    (tree) => new Set([...tree.directories.filter((d) => d.path !== '.').map((d) => `d ${d.path}`), ...tree.files.map((f) => `f ${f.path} ${f.size} ${f.sha256}`)]),
  );
}

/**
 * How many descriptors the trees of this process may hold open together
 * (etc/package-tree.json): the configured number, at most the configured
 * share of the process's open-file limit; none where that limit cannot be
 * read.
 */
function descriptorBudget(): number {
  let soft: number;
  try {
    const line = readFileSync('/proc/self/limits', 'latin1')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    soft = Number(line?.split(/\s+/)[3]);
  } catch {
    return 0;
  }
  if (!Number.isFinite(soft)) return 0;
  return Math.min(packageTreeDefaults.heldDescriptors, Math.floor(soft * packageTreeDefaults.heldDescriptorsShareOfOpenFileLimit));
}

/** This process's mount table, or undefined where it cannot be read (then no descriptor is held). */
function readMountTable(): string | undefined {
  try {
    return readFileSync('/proc/self/mountinfo', 'latin1');
  } catch {
    return undefined;
  }
}

let heldBudget: number | undefined;
let heldTotal = 0;
/** Numbers per entry in a tree's `heldAs`: device, inode, birth time. */
const HELD_FIELDS = 3;
/** Opens between two turns of the event loop while descriptors are taken. */
const OPENS_PER_SLICE = 512;

/** Background work on held descriptors (closing, opening), one task after the other: no two ever open for the same tree. */
let descriptorWork: Promise<void> = Promise.resolve();

/** Lets go of everything the process holds for a tree no longer cached: its descriptors and the workers' copy of its table. */
function forgetTree(tree: Tree): void {
  releaseDescriptors(tree);
  releaseIdentityTable(tree.table);
}

/** Whether `tree` is evicted or forgotten and no check of it runs: then nothing may hold anything for it. */
const abandoned = (tree: Tree): boolean => tree.checking === 0 && ![...cachedTrees.values()].includes(tree);

/** Closes every descriptor `tree` holds. */
function releaseDescriptors(tree: Tree): void {
  const { descriptors } = tree.table;
  for (let i = 0; i < descriptors.length; i++) {
    const held = dropHeld(tree, i);
    if (held !== undefined) closeHeld(held);
  }
}

/** A descriptor taken out of a tree, with the file it was opened on. */
interface DroppedDescriptor {
  readonly fd: number;
  readonly dev: number;
  readonly ino: number;
  readonly birthtimeMs: number;
}

/** Takes entry `index`'s descriptor out of the sweep and returns it (undefined if none), to be closed by the caller with {@link closeHeld}. */
function dropHeld(tree: Tree, index: number): DroppedDescriptor | undefined {
  const fd = Atomics.exchange(tree.table.descriptors, index, -1);
  if (fd < 0) return undefined;
  tree.held--;
  heldTotal--;
  const at = HELD_FIELDS * index;
  return { fd, dev: tree.heldAs[at]!, ino: tree.heldAs[at + 1]!, birthtimeMs: tree.heldAs[at + 2]! };
}

/**
 * Closes a dropped descriptor unless its number names another file now: a
 * number the embedding application closed and opened again is its own, and
 * closing it would pull a file out from under it.
 */
function closeHeld({ fd, dev, ino, birthtimeMs }: DroppedDescriptor): void {
  try {
    const stat = fstatSync(fd);
    if (stat.dev !== dev || stat.ino !== ino || stat.birthtimeMs !== birthtimeMs) return;
    closeSync(fd);
  } catch {
    // Closed from outside (the number is free or someone else's), or a read-only close that failed with nothing to flush.
  }
}

/**
 * Resolves once the descriptor work started by the checks so far is done
 * (for benchmarks and tests that measure or inspect a settled host).
 */
export function packageTreesSettled(): Promise<void> {
  return descriptorWork;
}

/**
 * Lets go of the descriptors of trees whose files were deleted (a removed
 * or upgraded plugin), so that their space is freed. Run on the background
 * chain after a check, never on a check's own path; the signal is the link
 * count of one held file, read with `fstat` (no path walk): a deleted
 * file's is 0, which is exactly when a held descriptor keeps its space.
 */
function releaseRemovedTrees(): void {
  for (const tree of cachedTrees.values()) {
    if (tree.held === 0 || tree.checking > 0) continue;
    const { descriptors } = tree.table;
    let index = tree.directories.length;
    while (index < descriptors.length && descriptors[index]! < 0) index++;
    if (index === descriptors.length) continue;
    const stat = heldStatus(tree, index);
    // A number that is not ours anymore is forgotten without a close; the tree's other files are looked at next time.
    if (stat === undefined) dropHeld(tree, index);
    else if (stat.nlink === 0) releaseDescriptors(tree);
  }
}

/** The status of entry `index`'s held descriptor, undefined when its number no longer names the file it was opened on. */
function heldStatus(tree: Tree, index: number): Stats | undefined {
  try {
    const stat = fstatSync(tree.table.descriptors[index]!);
    const at = HELD_FIELDS * index;
    return stat.dev === tree.heldAs[at] && stat.ino === tree.heldAs[at + 1] && stat.birthtimeMs === tree.heldAs[at + 2] ? stat : undefined;
  } catch {
    return undefined;
  }
}

/**
 * After a check passed, opens a descriptor on every file of `tree` that has
 * none, within the process's budget (trees used least recently give theirs
 * up first): the next sweep takes those files' status by `fstat`, which
 * skips the path walk that is most of an `lstat`'s cost, and a file whose
 * identity moved is re-hashed through it. A descriptor is held only on the
 * inode the check found holding the pinned bytes (a file swapped right
 * after the check is checked by its path next time), and its device and
 * inode are recorded for {@link closeHeld}.
 */
async function holdDescriptors(tree: Tree): Promise<void> {
  heldBudget ??= descriptorBudget();
  // Read before any open: a file opened after a mount over it names the mounted file, which the sweep flags.
  const mounts = readMountTable();
  if (tree.held > 0 && mounts !== tree.mounts && tree.checking === 0) releaseDescriptors(tree);
  if (tree.held === 0) tree.mounts = mounts;
  if (mounts === undefined || mounts !== tree.mounts) return;
  const wanted = tree.files.length - tree.held;
  if (wanted === 0 || tree.files.length > heldBudget) return;
  for (const other of cachedTrees.values()) {
    if (heldTotal + wanted <= heldBudget) break;
    if (other !== tree && other.checking === 0) releaseDescriptors(other);
  }
  if (heldTotal + wanted > heldBudget) return;
  tree.checking++;
  try {
    let opened = 0;
    for (const file of tree.files) {
      if (tree.table.descriptors[file.index]! >= 0) continue;
      let fd: number;
      let stat: Stats;
      try {
        fd = openForReading(tree.table.paths[file.index]!);
      } catch {
        continue;
      }
      try {
        stat = fstatSync(fd);
      } catch {
        closeSync(fd);
        continue;
      }
      // Another file than the one checked (swapped since): not held, and checked by its path next time.
      if (stat.dev !== file.known.dev || stat.ino !== file.known.ino) {
        closeSync(fd);
        continue;
      }
      const at = HELD_FIELDS * file.index;
      tree.heldAs[at] = stat.dev;
      tree.heldAs[at + 1] = stat.ino;
      tree.heldAs[at + 2] = stat.birthtimeMs;
      Atomics.store(tree.table.descriptors, file.index, fd);
      tree.held++;
      heldTotal++;
      if (++opened % OPENS_PER_SLICE === 0) await nextTurn();
    }
  } finally {
    tree.checking--;
  }
  // Evicted or forgotten while the descriptors were opened: they belong to no cached tree.
  if (abandoned(tree)) forgetTree(tree);
}

function lstatOrUndefined(path: string): Stats | undefined {
  return lstatSync(path, { throwIfNoEntry: false });
}

/** Checks one directory by its `lstat`; returns whether its identity is the one recorded (its entries were not listed again). */
function checkDirectory(root: string, dir: TreeDirectory, table: IdentityTable): boolean {
  const abs = join(root, dir.path);
  const stat = lstatOrUndefined(abs);
  if (stat === undefined) throw treeChange(root, dir.path, 'removed', 'was removed');
  if (!stat.isDirectory()) throw treeChange(root, dir.path, 'changed', 'is no longer a directory');
  if (permissionsOf(stat) !== dir.mode) throw treeChange(root, dir.path, 'changed', `changed mode (${permissionsOf(stat).toString(8)}, pinned ${dir.mode.toString(8)})`);
  const k = dir.known;
  if (k.ctimeMs === stat.ctimeMs && k.ino === stat.ino && k.mtimeMs === stat.mtimeMs && k.dev === stat.dev) return true;
  const names = readdirSync(abs);
  for (const name of names) {
    if (dir.path === '.' && name === PACKAGE_TREE_LIST_NAME) continue;
    if (!dir.children.has(name)) throw treeChange(root, dir.path === '.' ? name : `${dir.path}/${name}`, 'added', 'was added');
  }
  // Every name listed is one of the children; a count below theirs means one is gone (found below, by its lstat).
  dir.known = { ...identityOf(stat), size: DIRECTORY_SIZE };
  recordIdentity(table, dir.index, true, dir.mode, dir.known);
  return false;
}

/** The checks a file's status must pass before its identity or bytes count. */
function checkStatus(root: string, file: TreeFile, stat: Stats): void {
  if (!stat.isFile()) throw treeChange(root, file.path, 'changed', stat.isSymbolicLink() ? 'was replaced by a link' : 'is no longer a regular file');
  if (permissionsOf(stat) !== file.mode) throw treeChange(root, file.path, 'changed', `changed mode (${permissionsOf(stat).toString(8)}, pinned ${file.mode.toString(8)})`);
}

/** What the checks of one tree's files share. */
interface FileCheck {
  readonly root: string;
  readonly table: IdentityTable;
  /** The file the binding pins itself (relative), whose mismatch keeps the reason `digest_mismatch`. */
  readonly executablePath: string | undefined;
}

/** Checks one file by its `lstat`; returns -1 when its identity vouched for it, else the bytes hashed to check it. */
function checkFile(check: FileCheck, file: TreeFile): number {
  const { root } = check;
  const stat = lstatOrUndefined(join(root, file.path));
  if (stat === undefined) throw treeChange(root, file.path, 'removed', 'was removed');
  checkStatus(root, file, stat);
  if (sameIdentity(file.known, stat)) return -1;
  // Its status is taken again from the descriptor its bytes are read from.
  return checkFileOpened(check, file);
}

/**
 * Checks one file by opening it first (`O_NOFOLLOW`) and taking its status
 * from the descriptor, without an `lstat` before the open: for a file the
 * sweep saw as a regular file with its pinned mode whose identity moved.
 */
function checkFileOpened(check: FileCheck, file: TreeFile): number {
  const { root } = check;
  const abs = join(root, file.path);
  let fd: number;
  try {
    fd = openForReading(abs);
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') throw treeChange(root, file.path, 'removed', 'was removed');
    if (code === 'ELOOP') throw treeChange(root, file.path, 'changed', 'was replaced by a link');
    throw e;
  }
  try {
    const stat = fstatSync(fd);
    checkStatus(root, file, stat);
    if (sameIdentity(file.known, stat)) return -1;
    return checkHashed(check, file, abs, hashDescriptor(fd), stat);
  } finally {
    closeSync(fd);
  }
}

/** What {@link rehashHeld} returns when the file must be checked by its path instead. */
const BY_PATH = -2;

/**
 * Checks one file through the descriptor the host holds on it, for a file
 * whose path still leads to that descriptor's inode (its directory's
 * identity and the mount table unchanged): one `fstat` and reads by
 * position from offset 0, no open, no close, and the descriptor stays held.
 * Returns -1 when its identity vouched for it, the bytes hashed when they
 * are the pinned ones, or {@link BY_PATH}: no descriptor, a number that
 * names another file now (forgotten, not closed), another mode, or other
 * bytes. It never refuses: the check by path decides, and names the path.
 */
function rehashHeld(check: FileCheck, tree: Tree, file: TreeFile): number {
  if (tree.table.descriptors[file.index]! < 0) return BY_PATH;
  const stat = heldStatus(tree, file.index);
  if (stat === undefined) {
    dropHeld(tree, file.index);
    return BY_PATH;
  }
  if (permissionsOf(stat) !== file.mode) return BY_PATH;
  if (sameIdentity(file.known, stat)) return -1;
  let digest: Buffer;
  try {
    digest = hashDescriptor(tree.table.descriptors[file.index]!);
  } catch {
    return BY_PATH;
  }
  if (stat.size !== file.size || !file.digest.equals(digest)) return BY_PATH;
  // The status taken before the reads: a write during them moved the ctime past it, so the next check hashes the file again.
  return recordRehashed(check, file, stat);
}

/** Compares a re-hashed file with its pin, and remembers its identity when it holds the pinned bytes. */
function checkHashed(check: FileCheck, file: TreeFile, abs: string, digest: Buffer, stat: Stats): number {
  // Neither digest is a secret (the list is readable): a plain comparison.
  if (stat.size !== file.size || !file.digest.equals(digest)) {
    const actual = digest.toString('hex');
    if (file.path === check.executablePath) {
      throw new Refusal(
        untrusted('digest_mismatch', `${abs} changed since install (SHA-256 ${actual}, pinned ${file.sha256}).`, {
          path: abs,
          file: file.path,
          change: 'changed',
          expected_sha256: file.sha256,
          actual_sha256: actual,
        }),
      );
    }
    throw treeChange(check.root, file.path, 'changed', 'changed', { expected_sha256: file.sha256, actual_sha256: actual });
  }
  return recordRehashed(check, file, stat);
}

/** Remembers the identity found holding a file's pinned bytes; returns the bytes hashed. */
function recordRehashed(check: FileCheck, file: TreeFile, seen: RecordedIdentity): number {
  file.known = { dev: seen.dev, ino: seen.ino, size: seen.size, mtimeMs: seen.mtimeMs, ctimeMs: unmatchable(seen.dev, seen.ino, seen.ctimeMs) };
  recordIdentity(check.table, file.index, false, file.mode, file.known);
  return seen.size;
}

/** Whether a file's identity moved while it stayed a regular file with its pinned mode (a copy or a restore moves them all). */
function identityMoved(root: string, file: TreeFile): boolean {
  const stat = lstatOrUndefined(join(root, file.path));
  return stat !== undefined && stat.isFile() && permissionsOf(stat) === file.mode && !sameIdentity(file.known, stat);
}

/**
 * Sweeps every entry's identity (see identitySweep.ts), then checks on
 * this thread, in list order, only the entries the sweep flagged: a
 * directory whose identity moved is listed again, a file whose identity
 * moved is hashed again (through its held descriptor while its path still
 * leads there), anything else is looked at again and refused.
 */
async function verify(root: string, pin: PackageTreePin, executablePath: string | undefined): Promise<Result<PackageTreeCheck, HostError>> {
  // A cached list is taken without a turn of the event loop, so that the sweep's workers start within the caller's
  // call: a spawn gated on the check forks right after it, and the workers sweep while the host's thread forks.
  const cached = cachedTree(root, pin);
  const loaded = cached === undefined ? await loadTree(root, pin) : ok(cached);
  if (loaded.isErr()) return err(loaded.error);
  const tree = loaded.value;
  const { directories, files, table } = tree;
  const check: FileCheck = { root, table, executablePath };
  const slicer = new Slicer();
  let rehashed = 0;
  let passed = false;
  const dropped: DroppedDescriptor[] = [];
  tree.checking++;
  try {
    // A tree whose first files all moved was copied or restored: every file is opened and re-hashed, and a sweep
    // before that would only add an lstat per file.
    const restored = files.length > RESTORE_PROBE_FILES && files.slice(0, RESTORE_PROBE_FILES).every((file) => identityMoved(root, file));
    const verdicts = restored ? undefined : await sweepIdentities(table);
    // Read after the sweep: a mount placed before it hid a file whose held descriptor the sweep may have cleared.
    const mountsMoved = tree.mounts !== undefined && readMountTable() !== tree.mounts;
    const directoryUnchanged = new Uint8Array(directories.length);
    for (const dir of directories) {
      directoryUnchanged[dir.index] = verdicts?.[dir.index] === SWEEP_UNCHANGED || checkDirectory(root, dir, table) ? 1 : 0;
      if (slicer.due()) await nextTurn();
    }
    const verdictOf = (file: TreeFile): number => verdicts?.[file.index] ?? SWEEP_IDENTITY_MOVED;
    // A descriptor vouches for the file it was opened on; only an unchanged directory says that its name still leads there.
    const pathLeadsToHeld = (file: TreeFile): boolean => directoryUnchanged[file.parent] === 1 && !mountsMoved;
    // Files to re-hash that no held descriptor can serve: hashed by path first, on every thread (see hashByPath).
    const byPath = files.filter((file) => verdictOf(file) === SWEEP_IDENTITY_MOVED && !(pathLeadsToHeld(file) && table.descriptors[file.index]! >= 0)).map((file) => file.index);
    const pass = byPath.length > 0 ? await hashByPath(table, byPath) : undefined;
    let nextByPath = 0;
    for (const file of files) {
      const verdict = verdictOf(file);
      if (verdict === SWEEP_UNCHANGED && pathLeadsToHeld(file)) continue;
      const inPass = byPath[nextByPath] === file.index ? nextByPath++ : -1;
      let hashedBytes = inPass < 0 && verdict === SWEEP_IDENTITY_MOVED && pathLeadsToHeld(file) ? rehashHeld(check, tree, file) : BY_PATH;
      if (hashedBytes === BY_PATH) {
        const held = dropHeld(tree, file.index);
        if (held !== undefined) dropped.push(held);
        if (inPass >= 0 && pass!.pinned(inPass)) hashedBytes = recordRehashed(check, file, pass!.identity(inPass));
        // Not cleared by the pass (or never in it): checked here, where a refusal names the path.
        else hashedBytes = verdict === SWEEP_IDENTITY_MOVED ? checkFileOpened(check, file) : checkFile(check, file);
      }
      if (hashedBytes >= 0) rehashed++;
      if (slicer.due(Math.max(hashedBytes, 0))) await nextTurn();
    }
    passed = true;
  } catch (e) {
    if (e instanceof Refusal) return err(e.error);
    return err(ioError('Checking the files of', root, e));
  } finally {
    tree.checking--;
    // Closed and opened again after the check, beside the spawn it gates rather than before it.
    descriptorWork = descriptorWork
      .then(async () => {
        for (const held of dropped) closeHeld(held);
        releaseRemovedTrees();
        if (abandoned(tree)) forgetTree(tree);
        else if (passed) await holdDescriptors(tree);
      })
      // Only a speed-up: a tree whose descriptors could not be taken is swept by lstat, as before.
      .catch(() => undefined);
  }
  return ok({ unchanged: files.length - rehashed, rehashed });
}

/**
 * Checks an install root against its pinned file list just before a spawn.
 * `executablePath` (relative) names the file the binding pins itself, whose
 * mismatch keeps the reason `digest_mismatch`. A file changed, added or
 * removed is `PLUGIN_EXECUTABLE_UNTRUSTED` with `details.reason`
 * `file_changed`, `file_added` or `file_removed`, `details.path` (absolute),
 * `details.file` (relative to the root) and `details.change`; a list that
 * is missing or not the pinned one is `missing` or `digest_mismatch`.
 */
export function verifyPackageTree(installRoot: string, pin: PackageTreePin, executablePath?: string): ResultAsync<PackageTreeCheck, HostError> {
  return new ResultAsync(verify(installRoot, pin, executablePath));
}

/** Closes every descriptor the trees of this process hold, keeping their lists (for benchmarks that measure a check by path). */
export function releasePackageTreeDescriptors(): void {
  for (const tree of cachedTrees.values()) releaseDescriptors(tree);
}

/** Forgets every list and identity this process remembered (for benchmarks that measure a first check). */
export function forgetPackageTrees(): void {
  for (const tree of cachedTrees.values()) {
    releaseDescriptors(tree);
    releaseIdentityTable(tree.table);
  }
  cachedTrees.clear();
}
