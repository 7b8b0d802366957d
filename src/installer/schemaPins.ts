/**
 * Pins: the schema files an install in progress relies on before its catalog
 * transaction has committed. A pin is written, together with the files it
 * names, under the schema store's lock, and removed once the transaction has
 * committed or failed; a collection, holding the same lock, keeps every file
 * a live pin names. A pin outlives its install only when the install's
 * process died, and is then stale once that is certain enough (see
 * {@link DEAD_PIN_MIN_AGE_MS} and {@link PIN_STALE_MS}).
 */
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { processAlive } from '../catalog/ProfileLock.js';
import type { Clock } from '../ports/ports.js';
import type { ProfileLayout } from '../profile/ProfileLayout.js';

/** What a pin file records. */
interface SchemaPin {
  readonly pid: number;
  readonly hostname: string;
  readonly started_at_ms: number;
  /** Schema store file names (`<ref>.<sha256>.json`). */
  readonly files: readonly string[];
}

/**
 * A pin of another host, whose process cannot be checked, is stale after a
 * day: no install takes that long, and a pin that lives too long only keeps
 * files longer.
 */
export const PIN_STALE_MS = 24 * 60 * 60 * 1000;

/**
 * A pin naming this host whose process looks gone is stale only once it is
 * this old (15 minutes; no install holds its pin that long). Looking is not
 * proof: two containers sharing a profile volume and a hostname (a pod
 * without a shared PID namespace) cannot see each other's processes. A
 * process that is alive keeps its pin at any age (a reused pid too, which
 * again only keeps files).
 */
export const DEAD_PIN_MIN_AGE_MS = 15 * 60 * 1000;

const PIN_NAME = /^[0-9a-f]+\.json$/;

/** Writes the pin of one install. Returns its path, for {@link unpin}. */
export async function writePin(layout: ProfileLayout, nonce: string, files: readonly string[], clock: Clock): Promise<string> {
  const dir = layout.schemaPinsDir;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${nonce}.json`);
  const pin: SchemaPin = { pid: process.pid, hostname: osHostname(), started_at_ms: clock.now(), files };
  const handle = await open(path, 'wx', 0o600);
  try {
    await handle.writeFile(JSON.stringify(pin));
  } finally {
    await handle.close();
  }
  return path;
}

/** Removes a pin; a missing one is fine. */
export async function unpin(path: string): Promise<void> {
  await rm(path, { force: true });
}

/**
 * Whether a record written by an install (a schema pin, a staging owner) may
 * be taken as left by a dead process: another host's after
 * {@link PIN_STALE_MS}, this host's once its process looks gone and it is
 * older than {@link DEAD_PIN_MIN_AGE_MS}.
 */
export function isStale(pin: Pick<SchemaPin, 'pid' | 'hostname' | 'started_at_ms'>, host: string, now: number): boolean {
  const age = now - pin.started_at_ms;
  if (pin.hostname !== host) return age > PIN_STALE_MS;
  return age > DEAD_PIN_MIN_AGE_MS && !processAlive(pin.pid);
}

function parsePin(text: string): SchemaPin | undefined {
  try {
    const v = JSON.parse(text) as Partial<SchemaPin>;
    const valid =
      typeof v.pid === 'number' &&
      typeof v.hostname === 'string' &&
      typeof v.started_at_ms === 'number' &&
      Array.isArray(v.files) &&
      v.files.every((f) => typeof f === 'string');
    return valid ? (v as SchemaPin) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The files named by live pins. Call it holding the schema store's lock:
 * pins are written under it, so an unreadable pin is one whose writer died
 * mid-write. Stale and unreadable pins are deleted.
 */
export async function pinnedFiles(layout: ProfileLayout, clock: Clock): Promise<Set<string>> {
  const dir = layout.schemaPinsDir;
  const names = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [];
    throw e;
  });
  const files = new Set<string>();
  const host = osHostname();
  for (const name of names.filter((n) => PIN_NAME.test(n))) {
    const path = join(dir, name);
    const text = await readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
      // Unpinned meanwhile: its install committed or failed, which is not under the lock.
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (text === undefined) continue;
    const pin = parsePin(text);
    const stale = pin === undefined || isStale(pin, host, clock.now());
    if (stale) {
      await unpin(path);
      continue;
    }
    for (const file of pin.files) files.add(file);
  }
  return files;
}
