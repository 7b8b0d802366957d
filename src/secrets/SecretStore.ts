import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ResultAsync } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';

/**
 * Where plugin credentials live. The host reads them only to build a
 * plugin's environment at spawn; they never appear in inventory output.
 * Implement this over an OS keychain to keep secrets off disk.
 */
export interface SecretStore {
  /** The stored values of one plugin, keyed by env var name. */
  get(pluginId: string): ResultAsync<Readonly<Record<string, string>>, HostError>;
  /** Merges `values` into the plugin's stored values. */
  set(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<void, HostError>;
  /** Forgets every value of the plugin. */
  delete(pluginId: string): ResultAsync<void, HostError>;
}

const storeError = (operation: string, path: string) => (cause: unknown): HostError => ioError(operation, path, cause);

/**
 * The string values of a store's stored text (JSON of an object; other JSON
 * holds none). Text that is not JSON throws an error of its own: the
 * parser's would quote the text, which is a secret, into the host's error.
 */
export function storedValues(text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('the stored text is not a JSON object');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * The default {@link SecretStore}: one JSON file per plugin, mode 0600, in
 * `<profile>/secrets/` (mode 0700). The sandbox hides the whole profile
 * directory from plugins, so no plugin can read another's secrets, or its own
 * file, except through the environment the host builds for it. A write goes
 * to a temporary file of its own, renamed over the plugin's; one store's
 * writes and deletes of a plugin run one at a time (two at once shared one
 * temporary file: one reported success for values the other's rename threw
 * away). `delete` also removes temporary files a killed writer left.
 */
export class FileSecretStore implements SecretStore {
  private readonly dir: string;
  /** The last write or delete of each plugin, which the next waits for. */
  readonly #pending = new Map<string, Promise<unknown>>();

  /** @param profileDir - The profile directory that holds `secrets/`. */
  constructor(profileDir: string) {
    this.dir = join(profileDir, 'secrets');
  }

  /** {@inheritDoc SecretStore.get} */
  get(pluginId: string): ResultAsync<Readonly<Record<string, string>>, HostError> {
    return ResultAsync.fromPromise(this.read(pluginId), storeError('Reading the secrets in', this.file(pluginId)));
  }

  /** {@inheritDoc SecretStore.set} */
  set(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<void, HostError> {
    return ResultAsync.fromPromise(
      this.#oneAtATime(pluginId, async () => {
        const current = await this.read(pluginId);
        await this.write(pluginId, { ...current, ...values });
      }),
      storeError('Storing the secrets in', this.file(pluginId)),
    );
  }

  /** {@inheritDoc SecretStore.delete} */
  delete(pluginId: string): ResultAsync<void, HostError> {
    return ResultAsync.fromPromise(
      this.#oneAtATime(pluginId, async () => {
        await rm(this.file(pluginId), { force: true });
        // A writer killed before its rename left its temporary file, every value of the plugin in it.
        const left = await readdir(this.dir).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? [] : Promise.reject(e)));
        const temporary = new RegExp(`^${escapedForPattern(this.fileName(pluginId))}\\.\\d+(?:\\.[0-9a-f]+)?\\.tmp$`);
        for (const name of left.filter((n) => temporary.test(n))) await rm(join(this.dir, name), { force: true });
      }),
      storeError('Deleting the secrets in', this.file(pluginId)),
    );
  }

  /** Runs `work` after the plugin's previous write or delete in this store settled. */
  #oneAtATime<T>(pluginId: string, work: () => Promise<T>): Promise<T> {
    const ran = (this.#pending.get(pluginId) ?? Promise.resolve()).then(work, work);
    const settled = ran.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.set(pluginId, settled);
    void settled.then(() => {
      if (this.#pending.get(pluginId) === settled) this.#pending.delete(pluginId);
    });
    return ran;
  }

  private fileName(pluginId: string): string {
    return `${encodeURIComponent(pluginId)}.json`;
  }

  private file(pluginId: string): string {
    return join(this.dir, this.fileName(pluginId));
  }

  private async read(pluginId: string): Promise<Record<string, string>> {
    let text: string;
    try {
      text = await readFile(this.file(pluginId), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
    return storedValues(text);
  }

  private async write(pluginId: string, values: Record<string, string>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const target = this.file(pluginId);
    // Its own name, created anew ('wx'): another writer's file is never truncated or renamed in its place.
    const temp = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await open(temp, 'wx', 0o600);
    try {
      try {
        await handle.writeFile(JSON.stringify(values));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, target);
    } catch (e) {
      // A write that failed leaves no copy of the values behind.
      await rm(temp, { force: true });
      throw e;
    }
  }
}

/** `text` with the characters a regular expression gives a meaning escaped. */
function escapedForPattern(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
