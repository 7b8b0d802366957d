/**
 * The bound on what a gateway client that does not read can make the
 * gateway hold. Plugins' notifications (log messages, resource updates,
 * list changes, progress) go out to each client as they come; a client that
 * stops reading leaves them in its stream's write buffer. Past
 * `maxBufferedNotificationBytes` waiting on the stream, further
 * notifications are dropped and counted (the OpenTelemetry counter
 * `mcp_plugin_host.gateway.notifications.dropped`), and the first one written
 * after the stream drained is preceded by a gap notice: a `warning`
 * `notifications/message` from the logger `mcp-plugin-host` saying how many
 * were dropped, unless the client set a log level above `warning`
 * (`logging/setLevel`), as it would not get a warning logged otherwise.
 * Answers and requests are never dropped one by one: over HTTP, answers
 * held past the client's share of `http.maxBodyBytesInFlight` end their
 * exchange (streamableHttpTransport.ts); otherwise a client that stops
 * reading them stops getting new ones from its own requests.
 */
import type { JSONRPCMessage, JSONRPCNotification, LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import { metrics, type Counter, type MeterProvider } from '@opentelemetry/api';
import packageJson from '../../package.json' with { type: 'json' };
import { LOGGING_LEVELS } from '../host/mcpSurface.js';
import { TELEMETRY_SCOPE } from '../observability/telemetry.js';
import { GATEWAY_DEFAULTS } from './gatewayDefaults.js';

/** The counter of notifications dropped for clients that read too slowly. */
const DROPPED_NOTIFICATIONS_METRIC = 'mcp_plugin_host.gateway.notifications.dropped';

let counted: { readonly provider: MeterProvider; readonly counter: Counter } | undefined;

function droppedCounter(): Counter {
  const provider = metrics.getMeterProvider();
  if (counted?.provider !== provider) {
    const counter = provider
      .getMeter(TELEMETRY_SCOPE, packageJson.version)
      .createCounter(DROPPED_NOTIFICATIONS_METRIC, { unit: '{notification}', description: 'Notifications a gateway dropped because its client did not read them fast enough.' });
    counted = { provider, counter };
  }
  return counted.counter;
}

const GAP_NOTICE_LEVEL: LoggingLevel = 'warning';

/** The notice that tells a client how many notifications it missed. */
function gapNotice(dropped: number): JSONRPCNotification {
  return {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level: GAP_NOTICE_LEVEL, logger: GATEWAY_DEFAULTS.serverName, data: { dropped_notifications: dropped, reason: 'the client did not read them fast enough' } },
  };
}

/** Whether a message is a notification (no answer is expected of it, so it may be dropped). */
export function isNotification(message: JSONRPCMessage): boolean {
  return 'method' in message && !('id' in message);
}

/** One client's bound: what to write for each notification, given the bytes already waiting on its stream. */
export class NotificationBound {
  #dropped = 0;
  /** Whether the client's log level lets a gap notice through (every level does until it sets one). */
  #noticed = true;

  /**
   * @param transport - The client's transport, as the drop counter names it.
   * @param maxBytes - Bytes that may wait on a stream before notifications are dropped.
   */
  constructor(
    private readonly transport: 'stdio' | 'http',
    private readonly maxBytes: number = GATEWAY_DEFAULTS.maxBufferedNotificationBytes,
  ) {}

  /** Notifications this client missed since its last gap notice. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Reads what the client sent for the log level it sets (`logging/setLevel`), which gap notices respect. */
  observe(message: JSONRPCMessage): void {
    if (!('method' in message) || message.method !== 'logging/setLevel' || !('id' in message)) return;
    const level = message.params?.level;
    if (typeof level === 'string' && (LOGGING_LEVELS as readonly string[]).includes(level)) {
      this.#noticed = LOGGING_LEVELS.indexOf(level as LoggingLevel) <= LOGGING_LEVELS.indexOf(GAP_NOTICE_LEVEL);
    }
  }

  /**
   * The messages to write for `notification` when `buffered` bytes wait on
   * the stream: none (dropped) while over the bound, else the notification,
   * after a gap notice when some were dropped before it.
   */
  admit(notification: JSONRPCMessage, buffered: number): readonly JSONRPCMessage[] {
    if (buffered > this.maxBytes) {
      this.#dropped += 1;
      droppedCounter().add(1, { 'network.transport': this.transport === 'stdio' ? 'pipe' : 'tcp' });
      return [];
    }
    if (this.#dropped === 0) return [notification];
    const gap = gapNotice(this.#dropped);
    this.#dropped = 0;
    return this.#noticed ? [gap, notification] : [notification];
  }
}
