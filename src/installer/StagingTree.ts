import { createHash } from 'node:crypto';
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { identityKey, type HashedWhileWritten, type WrittenFile } from '../binding/packageTree.js';
import type { SafeEntryName } from './entryName.js';
import type { PackageLimits } from './limits.js';
import { linkTargetInside } from './packageLinks.js';
import { refuseEntry, refuseLimit } from './refusal.js';
import { writeAll } from './writeAll.js';

/** Mode of every staged directory. */
export const DIRECTORY_MODE = 0o755;
/** Mode of a staged file not marked executable. */
export const FILE_MODE = 0o644;
/** Mode of a staged file marked executable (any of the source's 0o111 bits). */
export const EXECUTABLE_MODE = 0o755;

const CREATE_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * The tree being built inside a private staging directory. Every archive
 * format and the directory copier feed it entries; it alone creates files,
 * so the limits, the modes and the duplicate rules are the same for all of
 * them. Nothing in the tree is ever a link: the tree is created from empty,
 * only by this class, and files are created with `O_EXCL | O_NOFOLLOW`. A
 * link in the package that stays inside it (npm's `node_modules/.bin/*`) is
 * counted and dropped, never created (see {@link StagingTree.dropLink}).
 */
export class StagingTree {
  private entries = 0;
  private bytes = 0;
  private readonly named = new Set<string>();
  private readonly directories = new Set<string>(['']);
  private readonly files = new Set<string>();
  private readonly dropped: string[] = [];
  private readonly written = new Map<string, WrittenFile>();
  private longest = 0;

  /**
   * @param root - An existing, empty directory only this process writes to.
   * @param limits - The entry and byte limits to enforce.
   */
  constructor(
    readonly root: string,
    private readonly limits: PackageLimits,
  ) {}

  /** Entries added so far, with the parent directories their names implied. */
  get entryCount(): number {
    return this.entries;
  }

  /** File bytes written so far. */
  get byteCount(): number {
    return this.bytes;
  }

  /**
   * The SHA-256 of every file written so far, taken from the bytes as they
   * were written, with the file's status when the tree let go of it: the
   * package tree pin reads a file again only when its status moved since.
   */
  get writtenFiles(): HashedWhileWritten {
    return this.written;
  }

  /**
   * Bytes of the longest entry name claimed so far (UTF-8, `/`-separated,
   * below the root): what an install root must leave room for, since a
   * longer path than the system takes could not be opened or deleted there.
   */
  get longestNameBytes(): number {
    return this.longest;
  }

  /** Names of the links dropped so far, in the order they were seen. */
  get droppedLinks(): readonly string[] {
    return this.dropped;
  }

  /**
   * Takes note of a symbolic link whose target stays inside the package and
   * leaves it out of the tree; returns `false`, changing nothing, when the
   * target leaves the package (the caller refuses the package with its own
   * code). Links are dropped rather than recreated because the executable
   * binding and the package tree pin accept no link anywhere below the
   * install root: a link is a name whose meaning can change after it was
   * pinned. What npm links (`.bin` entries for scripts and `npx`) is never
   * read by a server that is started by its own file.
   */
  dropLink(name: string, entry: SafeEntryName, target: string): boolean {
    if (entry.segments.length === 0 || linkTargetInside(entry.segments, target) === undefined) return false;
    this.claim(name, entry);
    // Held as a file name, so that a later entry below the link is a conflict rather than a directory made in its place.
    this.files.add(entry.normalized);
    this.dropped.push(entry.normalized);
    return true;
  }

  /** Counts one entry against `maxEntries`; call once per archive member, whatever its kind. */
  countEntry(name: string): void {
    this.entries += 1;
    if (this.entries > this.limits.maxEntries) {
      refuseLimit('maxEntries', this.limits.maxEntries, name, `package has more than ${this.limits.maxEntries} entries`);
    }
  }

  /** Creates a directory entry (and any missing parents). */
  // Async although its work is synchronous: a refusal reaches the caller as a rejection, as for the other entries.
  async addDirectory(name: string, entry: SafeEntryName): Promise<void> {
    this.claim(name, entry);
    if (this.files.has(entry.normalized)) refuseEntry('conflict', name, `directory '${name}' collides with a file`);
    this.ensureDirectory(name, entry.segments.slice(0, -1));
    // The entry itself was counted by the caller; only the parents its name implies count here.
    if (entry.segments.length > 0 && !this.directories.has(entry.normalized)) this.makeDirectory(name, entry.normalized);
  }

  /**
   * Creates a file entry from a stream of its bytes. `declaredSize` comes from
   * the archive header and is used only to refuse early; the bytes are counted
   * as they arrive and the limit holds whatever the header claimed.
   */
  async addFile(
    name: string,
    entry: SafeEntryName,
    executable: boolean,
    declaredSize: number,
    data: AsyncIterable<Uint8Array>,
  ): Promise<void> {
    this.claim(name, entry);
    if (entry.segments.length === 0 || entry.trailingSlash) refuseEntry('malformed', name, `file entry '${name}' names a directory`);
    if (this.directories.has(entry.normalized)) refuseEntry('conflict', name, `file '${name}' collides with a directory`);
    this.checkBytes(name, this.bytes + declaredSize);
    this.ensureDirectory(name, entry.segments.slice(0, -1));
    const path = join(this.root, ...entry.segments);
    const handle = await open(path, CREATE_FILE, 0o600).catch((cause: unknown) => this.mapCreateError(cause, name));
    this.files.add(entry.normalized);
    const hash = createHash('sha256');
    try {
      for await (const chunk of data) {
        this.chargeBytes(name, chunk.length);
        hash.update(chunk);
        await writeAll(handle, chunk);
      }
      await handle.chmod(executable ? EXECUTABLE_MODE : FILE_MODE);
      this.remember(await handle.stat({ bigint: true }), hash.digest());
    } finally {
      await handle.close();
    }
  }

  /**
   * Creates a file entry from bytes read whole (a small archive member;
   * `read` runs after the entry's name and declared size passed), with
   * synchronous system calls: for a package of thousands of small files, a
   * round trip to the thread pool per call costs more than the calls
   * themselves.
   */
  writeFile(name: string, entry: SafeEntryName, executable: boolean, declaredSize: number, read: () => Uint8Array): void {
    this.claim(name, entry);
    if (entry.segments.length === 0 || entry.trailingSlash) refuseEntry('malformed', name, `file entry '${name}' names a directory`);
    if (this.directories.has(entry.normalized)) refuseEntry('conflict', name, `file '${name}' collides with a directory`);
    this.checkBytes(name, this.bytes + declaredSize);
    const bytes = read();
    this.chargeBytes(name, bytes.length);
    this.ensureDirectory(name, entry.segments.slice(0, -1));
    let fd: number;
    try {
      fd = openSync(join(this.root, ...entry.segments), CREATE_FILE, 0o600);
    } catch (cause) {
      this.mapCreateError(cause, name);
    }
    this.files.add(entry.normalized);
    try {
      for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset);
      fchmodSync(fd, executable ? EXECUTABLE_MODE : FILE_MODE);
      this.remember(fstatSync(fd, { bigint: true }), createHash('sha256').update(bytes).digest());
    } finally {
      closeSync(fd);
    }
  }

  /** Records a written file's digest with its status taken after its last write and mode change. */
  private remember(stat: WrittenFile['stat'], digest: Buffer): void {
    this.written.set(identityKey(stat), { digest, stat });
  }

  private claim(name: string, entry: SafeEntryName): void {
    if (this.named.has(entry.normalized)) refuseEntry('duplicate', name, `entry '${name}' appears more than once`);
    this.named.add(entry.normalized);
    this.longest = Math.max(this.longest, Buffer.byteLength(entry.normalized));
  }

  private chargeBytes(name: string, count: number): void {
    this.bytes += count;
    this.checkBytes(name, this.bytes);
  }

  private checkBytes(name: string, total: number): void {
    if (total > this.limits.maxExtractedBytes) {
      refuseLimit(
        'maxExtractedBytes',
        this.limits.maxExtractedBytes,
        name,
        `package extracts to more than ${this.limits.maxExtractedBytes} bytes (at '${name}')`,
      );
    }
  }

  /**
   * Makes the parent directories `segments` name that do not exist yet. Each
   * one made counts against `maxEntries` as the entry it is: otherwise a few
   * names 2,000 levels deep would make thousands of directories the limit
   * never saw. A known directory's parents are all known, so an entry below
   * one costs a single lookup, not one per level (which made an archive of
   * 2,000 entries 1,900 levels down take a minute to stage).
   */
  private ensureDirectory(name: string, segments: readonly string[]): void {
    if (this.directories.has(segments.join('/'))) return;
    let relative = '';
    for (const segment of segments) {
      relative = relative === '' ? segment : `${relative}/${segment}`;
      if (this.directories.has(relative)) continue;
      if (this.files.has(relative)) refuseEntry('conflict', name, `entry '${name}' needs '${relative}' to be a directory, but it is a file`);
      this.countEntry(name);
      this.makeDirectory(name, relative);
    }
  }

  // Synchronous, as writeFile is: a mkdir and a chmod cost less than two trips to the thread pool.
  private makeDirectory(name: string, relative: string): void {
    const path = join(this.root, relative);
    try {
      mkdirSync(path, { mode: DIRECTORY_MODE });
    } catch (cause) {
      this.mapCreateError(cause, name);
    }
    chmodSync(path, DIRECTORY_MODE);
    this.directories.add(relative);
  }

  // A name this class has not created can still exist when the file system
  // folds case or Unicode forms ("A" and "a"): that is a duplicate too.
  private mapCreateError(cause: unknown, name: string): never {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') refuseEntry('duplicate', name, `entry '${name}' collides with another entry on this file system`);
    if (code === 'ENAMETOOLONG') refuseEntry('segment_too_long', name, `entry '${name}' is too long for this file system`);
    throw cause;
  }
}
