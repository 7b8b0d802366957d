/**
 * Plugin credentials in the OS keychain. On Linux that is the freedesktop
 * Secret Service (GNOME Keyring, KWallet) reached through `secret-tool`
 * (Debian package libsecret-tools); other platforms have no keychain store
 * here and keep the 0600 file store. Each plugin's values are one keychain
 * item, a JSON object, keyed by the app name, the profile directory and
 * the plugin id. Secret values travel on stdin and stdout only, never on a
 * command line.
 */
import { execFile, spawn } from 'node:child_process';
import { ResultAsync, okAsync } from 'neverthrow';
import secretStoreData from '../../etc/secret-store.json' with { type: 'json' };
import type { HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { FileSecretStore, storedValues, type SecretStore } from './SecretStore.js';

const LINUX = secretStoreData.keychain.linux;

/** Where a keychain store keeps its items and how it reaches the keychain. */
export interface KeychainSecretStoreOptions {
  /** The profile directory: items of one profile never answer for another. */
  readonly profileDir: string;
  /** The application name the items are filed under. */
  readonly appName: string;
  /** The `secret-tool` program. Default `secret-tool` on the search path of `env`. */
  readonly program?: string;
  /** The environment `secret-tool` runs in (it needs the D-Bus session address). Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** What one run of the program gave back. */
interface ToolRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A {@link SecretStore} over the Linux Secret Service (`secret-tool`). */
export class KeychainSecretStore implements SecretStore {
  readonly #o: Required<Omit<KeychainSecretStoreOptions, 'env'>> & { readonly env: Readonly<Record<string, string | undefined>> };

  /** @param options - The profile, app name and program; see {@link KeychainSecretStore.probe} to find out whether a keychain answers. */
  constructor(options: KeychainSecretStoreOptions) {
    this.#o = { program: LINUX.program, env: process.env, ...options };
  }

  /**
   * A store when the keychain answers here (Linux, `secret-tool` installed, a
   * Secret Service on the session bus), otherwise undefined. A lookup of an
   * item nobody stores tells them apart: a working keychain answers "not
   * found" silently, a missing one says why on stderr.
   */
  static probe(options: KeychainSecretStoreOptions): ResultAsync<KeychainSecretStore | undefined, never> {
    if (process.platform !== 'linux') return okAsync(undefined);
    const store = new KeychainSecretStore(options);
    return ResultAsync.fromSafePromise(
      store.#run(['lookup', LINUX.serviceAttribute, store.#o.appName, LINUX.probeAttribute, String(process.pid)]).then(
        (run) => (run.code === 1 && run.stderr.trim() === '' ? store : undefined),
        () => undefined,
      ),
    );
  }

  /** {@inheritDoc SecretStore.get} */
  get(pluginId: string): ResultAsync<Readonly<Record<string, string>>, HostError> {
    return ResultAsync.fromPromise(this.#read(pluginId), this.#failure('Reading the keychain item of', pluginId));
  }

  /** {@inheritDoc SecretStore.set} */
  set(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<void, HostError> {
    return ResultAsync.fromPromise(
      (async () => {
        const merged = { ...(await this.#read(pluginId)), ...values };
        const label = `${this.#o.appName} credentials of plugin ${pluginId}`;
        this.#expect(await this.#run(['store', `--label=${label}`, ...this.#attributes(pluginId)], JSON.stringify(merged)), [0]);
      })(),
      this.#failure('Storing the keychain item of', pluginId),
    );
  }

  /** {@inheritDoc SecretStore.delete} */
  delete(pluginId: string): ResultAsync<void, HostError> {
    return ResultAsync.fromPromise(
      this.#run(['clear', ...this.#attributes(pluginId)]).then((run) => this.#expect(run, [0, 1])),
      this.#failure('Deleting the keychain item of', pluginId),
    );
  }

  async #read(pluginId: string): Promise<Record<string, string>> {
    const run = await this.#run(['lookup', ...this.#attributes(pluginId)]);
    if (run.code === 1 && run.stderr.trim() === '') return {};
    this.#expect(run, [0]);
    return storedValues(run.stdout);
  }

  /** The item's attribute pairs, after `--`: a plugin id or profile path starting with `-` is a value, never an option. */
  #attributes(pluginId: string): string[] {
    return ['--', LINUX.serviceAttribute, this.#o.appName, LINUX.profileAttribute, this.#o.profileDir, LINUX.pluginAttribute, pluginId];
  }

  #expect(run: ToolRun, codes: readonly number[]): void {
    if (run.code === null || !codes.includes(run.code)) throw new Error(`${this.#o.program} exited with ${String(run.code)}: ${run.stderr.trim().split('\n')[0] ?? ''}`);
  }

  #failure(operation: string, pluginId: string): (cause: unknown) => HostError {
    return (cause) => ioError(`${operation} ${pluginId} in`, `the keychain (${this.#o.program})`, cause);
  }

  #run(args: readonly string[], input?: string): Promise<ToolRun> {
    if (input === undefined) {
      return new Promise((resolve, reject) => {
        execFile(this.#o.program, args, { env: this.#o.env, encoding: 'utf8' }, (error, stdout, stderr) => {
          if (error !== null && typeof error.code !== 'number') reject(error);
          else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
        });
      });
    }
    return new Promise((resolve, reject) => {
      const child = spawn(this.#o.program, args, { env: this.#o.env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input);
    });
  }
}

/**
 * The default secret store: the OS keychain where one answers (checked once,
 * on first use, so opening a host costs nothing), else the 0600 file store
 * in the profile. Values stored in the file before a keychain was available
 * are still read, and move into the keychain on the plugin's next `set`.
 */
export class PreferredSecretStore implements SecretStore {
  readonly #file: FileSecretStore;
  readonly #options: KeychainSecretStoreOptions;
  #keychain: Promise<KeychainSecretStore | undefined> | undefined;

  /** @param options - The profile, app name and environment the keychain is probed with. */
  constructor(options: KeychainSecretStoreOptions) {
    this.#options = options;
    this.#file = new FileSecretStore(options.profileDir);
  }

  /** `keychain` when the OS keychain holds the secrets, `file` when the profile's 0600 files do. */
  backend(): ResultAsync<'keychain' | 'file', never> {
    return ResultAsync.fromSafePromise(this.#chosen().then((k) => (k === undefined ? 'file' : 'keychain')));
  }

  /** {@inheritDoc SecretStore.get} */
  get(pluginId: string): ResultAsync<Readonly<Record<string, string>>, HostError> {
    return this.#with((keychain) =>
      keychain === undefined
        ? this.#file.get(pluginId)
        : keychain.get(pluginId).andThen((values) => (Object.keys(values).length > 0 ? okAsync(values) : this.#file.get(pluginId))),
    );
  }

  /** {@inheritDoc SecretStore.set} */
  set(pluginId: string, values: Readonly<Record<string, string>>): ResultAsync<void, HostError> {
    return this.#with((keychain) =>
      keychain === undefined
        ? this.#file.set(pluginId, values)
        : this.get(pluginId)
            .andThen((current) => keychain.set(pluginId, { ...current, ...values }))
            .andThen(() => this.#file.delete(pluginId)),
    );
  }

  /** {@inheritDoc SecretStore.delete} */
  delete(pluginId: string): ResultAsync<void, HostError> {
    return this.#with((keychain) => (keychain === undefined ? this.#file.delete(pluginId) : keychain.delete(pluginId).andThen(() => this.#file.delete(pluginId))));
  }

  #chosen(): Promise<KeychainSecretStore | undefined> {
    const probed = this.#keychain ?? Promise.resolve(KeychainSecretStore.probe(this.#options)).then((r) => r.unwrapOr(undefined));
    this.#keychain = probed;
    return probed;
  }

  #with<T>(body: (keychain: KeychainSecretStore | undefined) => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    return ResultAsync.fromSafePromise(this.#chosen()).andThen(body);
  }
}
