import type { ExitInfo, PluginProcess, ResourceLimitHit, StopOptions } from '../process/PluginProcess.js';
import type { SecretRedactor } from './knownSecrets.js';

/**
 * `process`'s stderr tail without the secrets `redactor` knows. Once its
 * ring dropped older bytes (a process that cannot say is taken to have), the
 * tail's first line may begin inside a secret, which no whole copy matches:
 * that partial line is dropped, or, when the tail is one line, the end of a
 * secret it begins with replaced.
 */
export function redactedStderrTail(process: PluginProcess, redactor: SecretRedactor): string {
  const tail = process.stderrTail();
  if (redactor.empty || !(process.stderrWrapped?.() ?? true)) return redactor.redact(tail);
  const firstLineEnd = tail.indexOf('\n');
  return firstLineEnd === -1 ? redactor.redactCutStart(tail) : redactor.redact(tail.slice(firstLineEnd + 1));
}

/**
 * A plugin process whose stderr, as the host hands it on (the tail in crash
 * and handshake errors, each line to `stderr` listeners), has the secret
 * values the host gave the plugin redacted. A plugin that prints its
 * environment or its configuration while it fails would otherwise put its
 * credentials in errors an application logs and a gateway client reads.
 * A wrapped tail is cut as {@link redactedStderrTail} says.
 */
export class SecretRedactingProcess implements PluginProcess {
  readonly pid: number;
  readonly stdin: PluginProcess['stdin'];
  readonly stdout: PluginProcess['stdout'];
  readonly exited: Promise<ExitInfo>;
  readonly limitHit?: () => ResourceLimitHit | undefined;
  readonly #inner: PluginProcess;
  readonly #redactor: SecretRedactor;

  /**
   * @param inner - The process as spawned.
   * @param redactor - The values the host put in its environment from the secret store or a grant.
   */
  constructor(inner: PluginProcess, redactor: SecretRedactor) {
    this.#inner = inner;
    this.#redactor = redactor;
    this.pid = inner.pid;
    this.stdin = inner.stdin;
    this.stdout = inner.stdout;
    this.exited = inner.exited;
    const limitHit = inner.limitHit?.bind(inner);
    if (limitHit !== undefined) this.limitHit = limitHit;
  }

  /** {@inheritDoc PluginProcess.exitInfo} */
  get exitInfo(): ExitInfo | undefined {
    return this.#inner.exitInfo;
  }

  /** {@inheritDoc PluginProcess.stderrTail} */
  stderrTail(): string {
    return redactedStderrTail(this.#inner, this.#redactor);
  }

  /** {@inheritDoc PluginProcess.stderrWrapped} */
  stderrWrapped(): boolean {
    return this.#inner.stderrWrapped?.() ?? true;
  }

  /** {@inheritDoc PluginProcess.onStderrLine} */
  onStderrLine(listener: (line: string) => void): () => void {
    return this.#inner.onStderrLine((line) => listener(this.#redactor.redact(line)));
  }

  /** {@inheritDoc PluginProcess.stop} */
  stop(options?: StopOptions): Promise<ExitInfo> {
    return this.#inner.stop(options);
  }
}

/** `process` with the secrets `redactor` knows kept out of its stderr, or `process` itself when it knows none. */
export function withSecretsRedacted(process: PluginProcess, redactor: SecretRedactor): PluginProcess {
  return redactor.empty ? process : new SecretRedactingProcess(process, redactor);
}
