/**
 * The host's side of auditing: its `audit` option, and the record of each
 * call built from the call's options, the catalog's facts on the plugin and
 * the call's outcome.
 */
import type { Result } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { EgressEvent } from '../egress/EgressProxy.js';
import type { HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import { KnownSecrets } from '../secrets/knownSecrets.js';
import { redactArguments, secretNameSet } from './auditLines.js';
import type { AuditCallRecord, AuditConnectionRecord, AuditRecord, AuditSink, CallerIdentity } from './auditRecord.js';

/** The `audit` option of `PluginHost.open`. */
export interface HostAuditOptions {
  /** Where records go (a {@link JsonlAuditSink}, or the application's own). */
  readonly sink: AuditSink;
  /** Record each call's arguments, secret fields redacted. Default false: arguments are left out. */
  readonly arguments?: boolean;
  /**
   * More argument field names whose values are secrets, beside the built-in
   * list (`password`, `token`, `api_key`, `authorization`, … in
   * `etc/audit-defaults.json`). A field matches when its name, lower-cased
   * without `-` and `_`, is one of them or ends with one.
   */
  readonly secretFields?: readonly string[];
}

/** What the host knows of a call when it ends. */
export interface AuditedCall {
  readonly opId: string;
  readonly plugin: InstalledPlugin | undefined;
  readonly args: unknown;
  readonly caller: CallerIdentity | undefined;
  readonly started: number;
}

/** The code digest a record names: the pinned tree when there is one, else the executable. */
export function codeDigest(plugin: InstalledPlugin): string {
  const binding = plugin.lock.binding;
  return `sha256:${binding.tree?.sha256 ?? binding.executable_sha256}`;
}

/** Writes one record per call, and one per connection through the egress proxy, to the host's sink. */
export class CallAuditor {
  readonly #sink: AuditSink;
  readonly #withArguments: boolean;
  readonly #secrets: ReadonlySet<string>;
  readonly #clock: Clock;
  readonly #known: KnownSecrets;

  /** @param known - The secret values the host gave its plugins, redacted from every record's arguments. */
  constructor(options: HostAuditOptions, clock: Clock, known: KnownSecrets = new KnownSecrets()) {
    this.#known = known;
    this.#sink = options.sink;
    this.#withArguments = options.arguments === true;
    this.#secrets = secretNameSet(options.secretFields);
    this.#clock = clock;
  }

  /** Records how `call` ended. */
  record(call: AuditedCall, outcome: Result<unknown, HostError>): void {
    const now = this.#clock.now();
    const plugin = call.plugin;
    const record: AuditCallRecord = {
      kind: 'call',
      at: new Date(now).toISOString(),
      ...(call.caller === undefined ? {} : { caller: call.caller }),
      op_id: call.opId,
      ...(plugin === undefined ? {} : { plugin_id: plugin.plugin_id, plugin_version: plugin.lock.version, code_digest: codeDigest(plugin) }),
      outcome: outcome.isOk() ? 'ok' : outcome.error.code,
      duration_ms: now - call.started,
      ...(this.#withArguments ? { arguments: redactArguments(call.args, this.#secrets, this.#known.redactor) } : {}),
    };
    this.#write(record);
  }

  /** Records a connection a plugin made through the egress proxy, as the proxy decided it. */
  connection(event: EgressEvent): void {
    const record: AuditConnectionRecord = { kind: 'connection', at: new Date(this.#clock.now()).toISOString(), ...event };
    this.#write(record);
  }

  #write(record: AuditRecord): void {
    try {
      this.#sink.write(record);
    } catch {
      // A sink is told not to throw; one that does must not turn a call's outcome, or the proxy's work, into its own failure.
    }
  }
}
