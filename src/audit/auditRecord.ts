/**
 * What the host writes to an audit sink: one record per call (who asked,
 * what ran, at which code digest, how it ended) and one per connection a
 * plugin made through the egress proxy. Records are plain JSON values so a
 * sink can store them as they are; docs/observability.md lists every field.
 */
import type { EgressEvent } from '../egress/EgressProxy.js';
import type { HostErrorCode } from '../errors/registry.js';

/**
 * Who asked for a call, as the host application knows them: its own user or
 * service id, and for the gateway the client's name and MCP session. The
 * host records it and never checks it: authentication is the application's.
 */
export interface CallerIdentity {
  /** The caller's id (a user, a service, a gateway client's name). */
  readonly id: string;
  /** The caller's session, when it has one (the gateway's MCP session id). */
  readonly session?: string;
  /** How the caller reached the host (`stdio`, `http`, or the application's own word). */
  readonly transport?: string;
}

/** The record of one `PluginHost.call`, written when the call ends, refused or not. */
export interface AuditCallRecord {
  /** Always `call`. */
  readonly kind: 'call';
  /** When the call ended (ISO 8601, UTC). */
  readonly at: string;
  /** The caller identity passed in `HostCallOptions.caller`; absent when none was. */
  readonly caller?: CallerIdentity;
  /** The op id asked for. */
  readonly op_id: string;
  /** The plugin the op id belongs to; absent when no installed plugin has it. */
  readonly plugin_id?: string;
  /** The plugin's installed version. */
  readonly plugin_version?: string;
  /**
   * The digest of the code that ran (`sha256:<hex>`): the pinned file list of
   * the whole install root, or the executable alone for plugins installed
   * before whole trees were pinned.
   */
  readonly code_digest?: string;
  /** `ok`, or the stable host error code the call failed with. */
  readonly outcome: 'ok' | HostErrorCode;
  /** From the call to its outcome, in ms (refusals included). */
  readonly duration_ms: number;
  /** The call's arguments with secret fields redacted, only when the host opted in. */
  readonly arguments?: unknown;
  /** Set when the arguments were left out because the record would pass the line bound. */
  readonly arguments_omitted?: 'too_large';
  /** Set when string fields were cut to fit the line bound. */
  readonly truncated?: true;
}

/**
 * The record of one connection a plugin made through the host's egress
 * proxy: the proxy's `egress` event (plugin, allowed or refused, method,
 * host, port, address, reason) with the time it was decided; or, with
 * `suppressed`, the proxy's summary of refused connections not reported one
 * by one.
 */
export interface AuditConnectionRecord extends EgressEvent {
  /** Always `connection`. */
  readonly kind: 'connection';
  /** When the proxy decided (ISO 8601, UTC). */
  readonly at: string;
  /** Set when string fields were cut to fit the line bound. */
  readonly truncated?: true;
}

/** Written by a sink in place of records it had to drop (its queue was full), once it can write again. */
export interface AuditGapRecord {
  /** Always `gap`. */
  readonly kind: 'gap';
  /** When the sink noticed it could write again (ISO 8601, UTC). */
  readonly at: string;
  /** How many records were dropped. */
  readonly dropped: number;
}

/** Every record an audit sink receives. */
export type AuditRecord = AuditCallRecord | AuditConnectionRecord | AuditGapRecord;

/**
 * Where audit records go. `write` is called on the host's hot path: it must
 * return at once and never throw (a sink that fails keeps its failure to
 * itself and reports it its own way, as {@link JsonlAuditSink} does).
 */
export interface AuditSink {
  /** Takes one record. */
  write(record: AuditRecord): void;
}
