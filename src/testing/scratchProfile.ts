import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { okAsync, ResultAsync } from 'neverthrow';
import { ioError, type HostError, type SecretStore } from '../index.js';

/** A throwaway profile directory under the OS temp directory. */
export function makeScratchDir(): ResultAsync<string, HostError> {
  const parent = tmpdir();
  return ResultAsync.fromPromise(mkdtemp(join(parent, 'mcp-plugin-host-testing-')), (cause) => ioError('Creating a scratch profile directory in', parent, cause));
}

/** Removes a scratch directory; a failure to remove is not the test's concern. */
export async function removeScratchDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Credentials held in memory for one throwaway profile, so a test never
 * writes secrets to disk. The profile holds one plugin, so the values given
 * at creation are that plugin's, whatever its id.
 */
export class MemorySecretStore implements SecretStore {
  readonly #values = new Map<string, Readonly<Record<string, string>>>();

  constructor(private readonly initial: Readonly<Record<string, string>>) {}

  get(pluginId: string): ResultAsync<Readonly<Record<string, string>>, HostError> {
    return okAsync(this.#values.get(pluginId) ?? this.initial);
  }

  set(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<void, HostError> {
    this.#values.set(pluginId, { ...(this.#values.get(pluginId) ?? this.initial), ...values });
    return okAsync(undefined);
  }

  delete(pluginId: string): ResultAsync<void, HostError> {
    this.#values.set(pluginId, {});
    return okAsync(undefined);
  }
}
