/** The gateway's defaults, from `etc/gateway-defaults.json`. */
import defaults from '../../etc/gateway-defaults.json' with { type: 'json' };
import type { RiskClass } from '../manifest/model.js';

/** The defaults a gateway falls back on. */
export interface GatewayDefaults {
  /** The MCP server name announced to clients. */
  readonly serverName: string;
  /** The address HTTP binds to: loopback. */
  readonly bindHost: string;
  /** The HTTP port. */
  readonly port: number;
  /** The risk ceiling of a client without its own. */
  readonly maxRisk: RiskClass;
  /** How often the catalog is read again to notice installs and removals. */
  readonly catalogPollMs: number;
  /** Random bytes in a generated bearer token. */
  readonly tokenBytes: number;
  /** Host names an Origin may carry without being configured. */
  readonly loopbackHostnames: readonly string[];
  /** The `_meta` key of the host error an error result carries. */
  readonly errorMetaKey: string;
  /** The caller id audit records give HTTP clients holding the default token. */
  readonly defaultClientName: string;
  /** The caller id audit records give the stdio client. */
  readonly stdioClientName: string;
  /** HTTP sessions open at once. */
  readonly maxSessions: number;
  /** Resource subscriptions one client (the stdio peer, each HTTP session) may hold at once. */
  readonly maxSubscriptionsPerClient: number;
  /** Plugins' requests one client (the stdio peer, an HTTP client's token) may have waiting for its answer at once. */
  readonly maxPendingRequestsPerClient: number;
  /** Bytes of notifications that may wait on one client's stream before more are dropped (docs/gateway.md, "Slow clients"). */
  readonly maxBufferedNotificationBytes: number;
  /** Time an HTTP session may stay idle before it is closed, in ms. */
  readonly sessionIdleMs: number;
  /** How often idle sessions are looked for, at most, in ms. */
  readonly sessionSweepMs: number;
  /** The shortest bearer token accepted from a token source. */
  readonly minTokenLength: number;
  /** The largest HTTP request body accepted, in bytes; a larger one is answered 413. */
  readonly maxRequestBytes: number;
  /** The most JSON-RPC messages one HTTP POST may carry as a batch. */
  readonly maxBatchMessages: number;
  /** Bytes of HTTP request bodies held at once, from a body's first byte until its answer ends; each client holds its share. */
  readonly maxBodyBytesInFlight: number;
  /** How often an open SSE stream carries a keep-alive comment, in ms. */
  readonly sseKeepAliveMs: number;
  /** The most bytes a bearer token file may hold (its first line is the token). */
  readonly maxTokenFileBytes: number;
  /** How often a token file is read again, so that a rotated token replaces the old one without a restart, in ms. */
  readonly tokenFileCheckMs: number;
  /** How long an idle keep-alive HTTP connection stays open, in ms. */
  readonly httpKeepAliveMs: number;
  /**
   * The most HTTP connections open at once, with or without a token; one more is closed as it arrives, so that
   * connections cannot take every file descriptor of the host's process.
   */
  readonly maxConnections: number;
  /** How a high_stakes_write confirmation is asked of the client as an elicitation. */
  readonly confirmation: GatewayConfirmationText;
}

/** The elicitation that asks a gateway client to confirm a high_stakes_write call. */
export interface GatewayConfirmationText {
  /** The message; `{op_id}`, `{plugin_id}`, `{risk_class}` and `{args}` (JSON) are filled in. */
  readonly message: string;
  /** The boolean field of the requested schema that must be true to run the call. */
  readonly field: string;
  /** That field's title. */
  readonly fieldTitle: string;
  /** That field's description. */
  readonly fieldDescription: string;
  /** The most time the client has to answer, in ms. */
  readonly timeoutMs: number;
}

/** The gateway's defaults, loaded once. */
export const GATEWAY_DEFAULTS: GatewayDefaults = Object.freeze({ ...defaults, maxRisk: defaults.maxRisk as RiskClass, loopbackHostnames: Object.freeze([...defaults.loopbackHostnames]) });
