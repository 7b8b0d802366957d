/**
 * The cross-process lock around every catalog transaction: an owner file
 * created with O_EXCL that records who holds it. Node has no flock, and an
 * mtime-refreshed lock (proper-lockfile) needs a heartbeat and still steals
 * from a slow owner; here a lock is stale only when its owner is provably
 * gone (same host, pid not running) or it is older than `staleMs`, and a
 * stale lock is removed under a per-lock steal ticket so that two waiters
 * can never both remove it (see docs/install-safety.md).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { errnoOf, ioError } from '../errors/ioError.js';
import type { Clock, Random } from '../ports/ports.js';

/** What the lock file records about its holder. */
export interface LockOwner {
  /** Process id of the holder. */
  readonly pid: number;
  /** Host name of the holder. */
  readonly hostname: string;
  /** When it took the lock (ISO 8601). */
  readonly started_at: string;
  /** When it took the lock (epoch ms), for age checks. */
  readonly started_at_ms: number;
  /** Random token identifying this holding. */
  readonly token: string;
}

/** Options of {@link ProfileLock.acquire}. */
export interface ProfileLockOptions {
  /** The lock file path. */
  readonly path: string;
  /** How long to wait for the lock before `CATALOG_LOCK_TIMEOUT`. */
  readonly timeoutMs: number;
  /** Age after which a lock is stale even if its owner looks alive. */
  readonly staleMs: number;
  /** Time (the deadline and lock ages). */
  readonly clock: Clock;
  /** Token source. */
  readonly random: Random;
}

/** A lock file left empty or unreadable by a holder that died while writing it is stale after this long. */
const UNREADABLE_GRACE_MS = 2_000;
/** A steal ticket is held for a few system calls; one older than this belongs to a dead stealer. */
const TICKET_STALE_MS = 10_000;

/** Whether a process of this host is still running (a zombie counts as gone). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return errnoOf(e) === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

function parseOwner(raw: string): LockOwner | undefined {
  try {
    const v = JSON.parse(raw) as Partial<LockOwner>;
    if (typeof v.pid === 'number' && typeof v.hostname === 'string' && typeof v.token === 'string' && typeof v.started_at_ms === 'number') {
      return v as LockOwner;
    }
  } catch {
    // an empty or half-written lock file
  }
  return undefined;
}

/** A held profile lock. */
export class ProfileLock {
  readonly #path: string;
  readonly #owner: LockOwner;
  #held = true;

  private constructor(path: string, owner: LockOwner) {
    this.#path = path;
    this.#owner = owner;
  }

  /** Who holds it (this process). */
  get owner(): LockOwner {
    return this.#owner;
  }

  /** Waits for the lock, recovering it from a dead owner; `CATALOG_LOCK_TIMEOUT` after `timeoutMs`. */
  static async acquire(options: ProfileLockOptions): Promise<Result<ProfileLock, HostError>> {
    const { clock, path } = options;
    const deadline = clock.now() + options.timeoutMs;
    let delay = 2;
    let lastOwner: LockOwner | undefined;
    for (;;) {
      const owner: LockOwner = {
        pid: process.pid,
        hostname: osHostname(),
        started_at: new Date(clock.now()).toISOString(),
        started_at_ms: clock.now(),
        token: Buffer.from(options.random.bytes(16)).toString('hex'),
      };
      try {
        const handle = await open(path, 'wx', 0o600);
        try {
          await handle.writeFile(JSON.stringify(owner));
        } finally {
          await handle.close();
        }
        return ok(new ProfileLock(path, owner));
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') return err(lockIoError(path, e));
      }
      const held = await inspectHeldLock(options);
      if (held.isErr()) return err(held.error);
      if (held.value === 'gone') continue; // stale and removed, or released meanwhile: try again at once
      if (held.value !== 'busy') lastOwner = held.value;
      if (clock.now() >= deadline) {
        return err(
          hostError('CATALOG_LOCK_TIMEOUT', `The profile lock ${path} is held by pid ${lastOwner?.pid ?? '?'} on ${lastOwner?.hostname ?? '?'}; gave up after ${options.timeoutMs} ms.`, {
            details: { lock: path, timeout_ms: options.timeoutMs, ...(lastOwner ? { owner: lastOwner } : {}) },
          }),
        );
      }
      // A referenced timer: a process waiting for the lock must stay alive (Clock timers are unref'd).
      await sleep(delay + Math.floor(Math.random() * delay));
      delay = Math.min(delay * 2, 50);
    }
  }

  /** Whether the lock file still names this holder. */
  async stillHeld(): Promise<boolean> {
    if (!this.#held) return false;
    try {
      return parseOwner(await readFile(this.#path, 'utf8'))?.token === this.#owner.token;
    } catch {
      return false;
    }
  }

  /** Releases the lock (only if the file still names this holder). Safe to call twice. */
  async release(): Promise<void> {
    if (!(await this.stillHeld())) return;
    this.#held = false;
    await unlink(this.#path).catch(() => undefined);
  }
}

function lockIoError(path: string, cause: unknown): HostError {
  return ioError('Using the profile lock', path, cause);
}

/**
 * Looks at the current lock: its live owner; `gone` when it vanished or was
 * stale and is now removed; `busy` when another waiter is removing it.
 */
async function inspectHeldLock(options: ProfileLockOptions): Promise<Result<LockOwner | 'gone' | 'busy', HostError>> {
  const { path, clock } = options;
  let raw: string;
  let mtimeMs: number;
  try {
    raw = await readFile(path, 'utf8');
    mtimeMs = (await stat(path)).mtimeMs;
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return ok('gone');
    return err(lockIoError(path, e));
  }
  const owner = parseOwner(raw);
  const now = clock.now();
  const stale =
    owner === undefined
      ? now - mtimeMs > UNREADABLE_GRACE_MS
      : (owner.hostname === osHostname() && !processAlive(owner.pid)) || now - owner.started_at_ms > options.staleMs;
  if (!stale) return ok(owner ?? { pid: 0, hostname: '?', started_at: '', started_at_ms: mtimeMs, token: '' });
  return ok((await removeStale(path, raw, clock)) ? 'gone' : 'busy');
}

/**
 * Removes the lock file only if it still holds `observed`. The per-content
 * ticket (O_EXCL) makes the check-and-unlink exclusive among stealers, and a
 * holder never deletes a lock that is not its own, so the file cannot change
 * between the check and the unlink.
 */
async function removeStale(path: string, observed: string, clock: Clock): Promise<boolean> {
  const ticket = `${path}.steal-${createHash('sha256').update(observed).digest('hex').slice(0, 16)}`;
  try {
    await (await open(ticket, 'wx', 0o600)).close();
  } catch (e) {
    if (errnoOf(e) !== 'EEXIST') return false;
    try {
      if (clock.now() - (await stat(ticket)).mtimeMs > TICKET_STALE_MS) await unlink(ticket);
    } catch {
      // another stealer finished meanwhile
    }
    return false;
  }
  try {
    if ((await readFile(path, 'utf8')) === observed) await unlink(path);
  } catch {
    // gone already
  } finally {
    await unlink(ticket).catch(() => undefined);
  }
  return true;
}
