import { Resolver } from 'node:dns/promises';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import { EventBudget } from '../budget/EventBudget.js';
import { systemClock, type Clock } from '../ports/ports.js';
import { canonicalAddress, isOwnInterfaceAddress, ownInterfaceAddresses, refusedKind, type RefusedAddressKind } from './addresses.js';
import { checkDestination, listsAddress, type DestinationRefusal, type EgressPolicy } from './destinations.js';

/**
 * How the egress proxy turns a name into addresses. The proxy resolves
 * every name itself (a plugin never does: it has no route to a resolver)
 * and checks each address before it dials it.
 */
export interface EgressResolver {
  /**
   * The addresses of `hostname`, in the order to try them. Default: DNS
   * queries (c-ares, the servers of /etc/resolv.conf) for exactly `hostname`,
   * no `search` domain appended, the hosts file not read; A and AAAA, IPv4
   * first.
   */
  resolve(hostname: string): Promise<readonly string[]>;
  /**
   * Where a checked address is really dialled. Default: the address itself.
   * Tests route a public test address to a loopback origin with it, so that
   * no traffic leaves the machine while the real checks run.
   */
  route?(address: string, port: number): { readonly host: string; readonly port: number };
}

/** Why the proxy refused a connection. */
export type EgressRefusalReason = DestinationRefusal | 'refused_address' | 'resolution_failed' | 'connect_failed' | 'bad_request' | 'connection_limit';

/** One connection or request a plugin made through the egress proxy, allowed or refused. */
export interface EgressEvent {
  /** The plugin that made the connection. */
  readonly plugin_id: string;
  /** Whether the proxy let the connection through. */
  readonly allowed: boolean;
  /** `CONNECT` for a tunnel (HTTPS), else the plain HTTP method; empty for a connection refused before its request was read. */
  readonly method: string;
  /**
   * The destination as the plugin asked for it (empty, port 0, when refused
   * before its request was read), cut to `maxEventHostChars` (255) and marked
   * `…` past that: no destination is longer, and every event may be an audit
   * line.
   */
  readonly host: string;
  /** The destination port as the plugin asked for it. */
  readonly port: number;
  /** The address dialled (allowed) or the last one refused, when resolution got that far. */
  readonly address?: string;
  /** Why the connection was refused; absent when it was allowed. */
  readonly reason?: EgressRefusalReason;
  /** For `refused_address`: the kind of range the address lies in. */
  readonly refused_kind?: RefusedAddressKind;
  /**
   * Set on a summary, not a connection: how many refused connections of this
   * plugin, for this `reason`, were not reported one by one since its last
   * summary, because they came faster than `refusedEventsPerSecond` (burst
   * `refusedEventsBurst`). A summary has `allowed: false`, the `reason`, an
   * empty `method` and `host`, and port 0. Refused connections = refused
   * events without `suppressed` + the sum of `suppressed`.
   */
  readonly suppressed?: number;
}

/** The proxy's bounds on connections, from `etc/egress/proxy.json`. */
export interface EgressProxyLimits {
  /** Connections one plugin may hold open at once. */
  readonly maxConnectionsPerPlugin: number;
  /** Connections all plugins together may hold open at once (each is a host descriptor, two for a tunnel). */
  readonly maxConnections: number;
  /** How long a connection may wait for its first request's headers. */
  readonly headersTimeoutMs: number;
  /** How long an established tunnel may carry nothing either way before both ends are closed. */
  readonly tunnelIdleTimeoutMs: number;
  /** Refused events (and summaries) one plugin may cause per second, for each refusal reason, once its burst is spent. */
  readonly refusedEventsPerSecond: number;
  /** Refused events one plugin may cause at once, for each refusal reason, before they are counted into a summary instead. */
  readonly refusedEventsBurst: number;
}

/** Options of {@link EgressProxy}. */
export interface EgressProxyOptions {
  readonly resolver?: EgressResolver;
  /**
   * Called for every connection and request allowed, and for refused ones
   * up to the refused-event budget; past it, with a summary
   * ({@link EgressEvent.suppressed}) once the budget refills.
   */
  readonly onEvent?: (event: EgressEvent) => void;
  /** Other bounds than `etc/egress/proxy.json`'s (tests use small ones). */
  readonly limits?: Partial<EgressProxyLimits>;
  /** Time and timers of the refused-event budget. Default: the real clock. */
  readonly clock?: Clock;
}

interface Attachment {
  readonly pluginId: string;
  readonly policy: EgressPolicy;
  /** Connections of this plugin open now. */
  open: number;
}

type Dialled = { readonly socket: Socket; readonly address: string } | { readonly refusal: EgressRefusalReason; readonly address?: string; readonly kind?: RefusedAddressKind };

/**
 * The proxy's own look-ups: c-ares queries to the servers of /etc/resolv.conf,
 * A and AAAA at once, IPv4 first. Not `dns.lookup`: getaddrinfo runs on the
 * two thread-pool threads Node gives look-ups, so a plugin whose list names
 * its own zone could hold them with names its server never answers and stall
 * every other plugin's requests (and every look-up of the host) behind them;
 * and it tried a name that does not resolve again with each `search` domain
 * appended, dialling a name the list never allowed. A query is sent for
 * exactly the checked name; the hosts file is not read.
 */
function systemResolver(): EgressResolver {
  const resolver = new Resolver({ timeout: proxySettings.resolveTimeoutMs, tries: proxySettings.resolveTries });
  return {
    resolve: async (hostname) => {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
      const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
      if (addresses.length === 0) throw v4.status === 'rejected' ? v4.reason : new Error(`no address for ${hostname}`);
      return addresses;
    },
  };
}

/** Request headers that belong to one hop (RFC 9110 §7.6.1) or to the proxy, never forwarded. */
const HOP_HEADERS = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_HEADERS.has(name) && !named.has(name)) out[name] = value;
  return out;
}

/** `host` and `port` of a CONNECT target (`host:port`, `[v6]:port`). */
function connectTarget(target: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):([0-9]{1,5})$/.exec(target);
  const port = Number(match?.[3]);
  if (match === null || !(port >= 1 && port <= 65535)) return undefined;
  return { host: match[1] ?? match[2] ?? '', port };
}

function dialOnce(host: string, port: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const fail = (): void => {
      socket.destroy();
      resolve(undefined);
    };
    socket.setTimeout(proxySettings.connectTimeoutMs, fail);
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.setTimeout(0);
      socket.removeListener('error', fail);
      resolve(socket);
    });
  });
}

/**
 * The host's egress proxy: one per host, serving every plugin that has a
 * destination list, each connection under the policy of the plugin whose
 * sandbox it came from. It listens on no address of the host: it serves
 * the connections accepted on each plugin's own listener, opened inside
 * that plugin's network namespace (`sandboxProxyListener`), so the only way
 * in is from a sandbox, and the sandbox a connection came from is known by
 * the listener it arrived on, not by anything the plugin says.
 *
 * It speaks HTTP CONNECT (tunnels, so HTTPS stays end to end) and plain
 * HTTP with absolute URLs; not SOCKS. For each request it checks the
 * destination against the list, resolves the name itself, refuses
 * addresses in the ranges of `etc/egress/refused-ranges.json` unless the
 * list names the address, dials exactly the checked address and checks the
 * connected peer again. A name that resolves to a public address once and
 * to a private one later (DNS rebinding) is thus refused on the later
 * request: nothing but the proxy ever resolves, and the check is on what
 * is dialled.
 */
export class EgressProxy {
  private readonly server: Server;
  private readonly attached = new WeakMap<Socket, Attachment>();
  private readonly resolver: EgressResolver;
  private readonly onEvent: (event: EgressEvent) => void;
  private readonly limits: EgressProxyLimits;
  /** Reads CONNECT tunnels to plain-HTTP ports as HTTP, each under the target it was opened to. */
  private readonly tunnelServer: Server;
  private readonly tunnelTargets = new WeakMap<Socket, { readonly attachment: Attachment; readonly authority: string }>();
  /** Connections of all plugins open now. */
  private open = 0;
  /** The deadline of each connection waiting for a request's headers. */
  private readonly headerDeadlines = new WeakMap<Socket, NodeJS.Timeout>();
  private readonly clock: Clock;
  /**
   * Refused-event budgets by plugin id and reason. Keyed by id, not by
   * attachment, so a restarted plugin does not get a fresh burst; bounded by
   * the plugins attached times the reasons.
   */
  private readonly refusalBudget: EventBudget<string>;

  constructor(options: EgressProxyOptions = {}) {
    this.resolver = options.resolver ?? systemResolver();
    this.limits = {
      maxConnectionsPerPlugin: proxySettings.maxConnectionsPerPlugin,
      maxConnections: proxySettings.maxConnections,
      headersTimeoutMs: proxySettings.headersTimeoutMs,
      tunnelIdleTimeoutMs: proxySettings.tunnelIdleTimeoutMs,
      refusedEventsPerSecond: proxySettings.refusedEventsPerSecond,
      refusedEventsBurst: proxySettings.refusedEventsBurst,
      ...options.limits,
    };
    this.clock = options.clock ?? systemClock;
    this.refusalBudget = new EventBudget({ perSecond: this.limits.refusedEventsPerSecond, burst: this.limits.refusedEventsBurst }, this.clock);
    const listener = options.onEvent;
    this.onEvent = (event) => {
      try {
        listener?.(event);
      } catch {
        // A listener that throws must not take the host down: events are reported from the proxy's own callbacks.
      }
    };
    // An idle keep-alive connection is closed after the same time a new one may wait for its first request.
    this.server = createServer({ requestTimeout: 0, keepAliveTimeout: this.limits.headersTimeoutMs });
    this.server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.forward(req, res));
    this.server.on('clientError', (_e, socket: Socket) => socket.destroy());
    this.tunnelServer = createServer({ requestTimeout: 0, keepAliveTimeout: this.limits.headersTimeoutMs });
    this.tunnelServer.on('request', (req: IncomingMessage, res: ServerResponse) => void this.forward(req, res));
    this.tunnelServer.on('connect', (_req: IncomingMessage, socket: Socket) => socket.destroy());
    this.tunnelServer.on('clientError', (_e, socket: Socket) => socket.destroy());
  }

  /**
   * The entry point of one plugin's connections: a function that serves a
   * connection under `policy` and reports it as `pluginId`'s.
   */
  attach(pluginId: string, policy: EgressPolicy): (socket: Socket) => void {
    const attachment: Attachment = { pluginId, policy, open: 0 };
    return (socket) => {
      socket.on('error', () => socket.destroy());
      // Every connection is a descriptor of the host process: neither one plugin nor all of them together hold an unbounded number.
      if (attachment.open >= this.limits.maxConnectionsPerPlugin || this.open >= this.limits.maxConnections) {
        this.report(attachment, '', '', 0, { refusal: 'connection_limit' });
        return void socket.destroy();
      }
      attachment.open++;
      this.open++;
      socket.once('close', () => {
        attachment.open--;
        this.open--;
      });
      socket.once('close', () => this.requestArrived(socket));
      this.awaitRequest(socket);
      this.attached.set(socket, attachment);
      this.server.emit('connection', socket);
    };
  }

  /**
   * Gives `socket` headersTimeoutMs in all for its next request's headers. A
   * deadline, not an idle timeout: headers dripped in a byte at a time would
   * keep an idle timer from ever firing (the server never listens, so its own
   * header timeout does not run).
   */
  private awaitRequest(socket: Socket): void {
    clearTimeout(this.headerDeadlines.get(socket));
    this.headerDeadlines.set(
      socket,
      setTimeout(() => socket.destroy(), this.limits.headersTimeoutMs),
    );
  }

  private requestArrived(socket: Socket): void {
    clearTimeout(this.headerDeadlines.get(socket));
    this.headerDeadlines.delete(socket);
  }

  private report(attachment: Attachment, method: string, host: string, port: number, outcome: Dialled | { refusal: EgressRefusalReason }): void {
    // The plugin writes `host` (a request line of up to 16 KiB): a refused one per connection would fill the audit file 12 KB at a time.
    const shown = host.length > proxySettings.maxEventHostChars ? `${host.slice(0, proxySettings.maxEventHostChars)}…` : host;
    const base = { plugin_id: attachment.pluginId, method, host: shown, port };
    if ('socket' in outcome) this.onEvent({ ...base, allowed: true, address: outcome.address });
    else if (this.refusalReported(attachment.pluginId, outcome.refusal))
      this.onEvent({ ...base, allowed: false, reason: outcome.refusal, ...('address' in outcome && outcome.address !== undefined ? { address: outcome.address } : {}), ...('kind' in outcome && outcome.kind !== undefined ? { refused_kind: outcome.kind } : {}) });
  }

  /**
   * Whether a refused connection of `pluginId` for `reason` is reported on
   * its own. Allowed connections are bounded by the traffic they carry; a
   * refused one costs the plugin nothing, so a loop of them (or of
   * connections past its connection cap) would be an event and an audit line
   * each, without end. Past the budget the connection is counted instead, and
   * the count reported in one summary as soon as a token is free again.
   */
  private refusalReported(pluginId: string, reason: EgressRefusalReason): boolean {
    // A reason is one word: the pair is one key, and the summary names both.
    return this.refusalBudget.admit(`${reason} ${pluginId}`, (suppressed) => this.onEvent({ plugin_id: pluginId, allowed: false, method: '', host: '', port: 0, reason, suppressed }));
  }

  /**
   * Reports now every summary of refused connections still waiting for its
   * budget to refill ({@link EgressEvent.suppressed}), so that no count is
   * lost when the host closes. The proxy still serves the connections of
   * plugins attached; a refusal after this is budgeted as before.
   */
  close(): void {
    this.refusalBudget.flush();
  }

  /** Checks, resolves and dials a destination for a plugin; the connected socket or why not. */
  private async dial(policy: EgressPolicy, host: string, port: number): Promise<Dialled> {
    const checked = checkDestination(policy, host, port);
    if (!checked.allowed) return { refusal: checked.reason };
    let addresses: readonly string[];
    try {
      addresses = checked.isAddress ? [checked.host] : await this.resolver.resolve(checked.host);
    } catch {
      return { refusal: 'resolution_failed' };
    }
    let refused: Dialled | undefined;
    const own = ownInterfaceAddresses();
    // The answer is the name's owner's to choose (a 64 KiB DNS answer holds 4,000 addresses), and every address tried
    // is checked on the thread every plugin and the gateway share: only the first few are tried.
    for (const address of addresses.slice(0, proxySettings.maxAddressesPerName)) {
      // The host's own interface addresses first: a service bound to one of them (or to all) is the host's, in any range.
      const kind = isIP(address) === 0 ? 'reserved' : isOwnInterfaceAddress(address, own) ? 'self' : refusedKind(address);
      if (kind !== undefined && !listsAddress(policy, address, port)) {
        refused ??= { refusal: 'refused_address', address, kind };
        continue;
      }
      const target = this.resolver.route?.(address, port) ?? { host: address, port };
      const socket = await dialOnce(target.host, target.port);
      if (socket === undefined) continue;
      // The peer the kernel connected is the one checked: nothing between the check and the dial resolved anything.
      if (canonicalAddress(socket.remoteAddress ?? '') !== canonicalAddress(target.host)) {
        socket.destroy();
        continue;
      }
      return { socket, address };
    }
    return refused ?? (addresses.length === 0 ? { refusal: 'resolution_failed' } : { refusal: 'connect_failed', ...(addresses[0] === undefined ? {} : { address: addresses[0] }) });
  }

  private async tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    const attachment = this.attached.get(client);
    if (attachment === undefined) return void client.destroy();
    this.requestArrived(client);
    const target = connectTarget(req.url ?? '');
    if (target === undefined) {
      this.report(attachment, 'CONNECT', req.url ?? '', 0, { refusal: 'bad_request' });
      return void client.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    }
    // Plain HTTP goes through the proxy's own forwarding, under the Host it checked: a raw tunnel would carry any Host the plugin writes.
    if (proxySettings.plainHttpPorts.includes(target.port)) return this.plainTunnel(attachment, req, client, head, target);
    const dialled = await this.dial(attachment.policy, target.host, target.port);
    this.report(attachment, 'CONNECT', target.host, target.port, dialled);
    if (!('socket' in dialled)) {
      const status = dialled.refusal === 'connect_failed' || dialled.refusal === 'resolution_failed' ? '502 Bad Gateway' : '403 Forbidden';
      return void client.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\nX-Egress-Refused: ${dialled.refusal}\r\n\r\n`);
    }
    const upstream = dialled.socket;
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    // A tunnel nobody uses still holds two host descriptors.
    const idle = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.setTimeout(this.limits.tunnelIdleTimeoutMs, idle);
    upstream.setTimeout(this.limits.tunnelIdleTimeoutMs, idle);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  }

  /**
   * A CONNECT to a plain-HTTP port (Node's fetch tunnels every proxied
   * request, `http:` too): the proxy answers 200 but reads the tunnel as HTTP
   * itself. Each request in it must be in origin form (`GET /path`) and is
   * forwarded to the CONNECT target, checked again, with that target as its
   * `Host`; an absolute URL naming another host is refused as a bad request.
   */
  private plainTunnel(attachment: Attachment, req: IncomingMessage, client: Socket, head: Buffer, target: { host: string; port: number }): void {
    const check = checkDestination(attachment.policy, target.host, target.port);
    if (!check.allowed) {
      this.report(attachment, 'CONNECT', target.host, target.port, { refusal: check.reason });
      return void client.end(`HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\nX-Egress-Refused: ${check.reason}\r\n\r\n`);
    }
    const authority = req.url ?? '';
    this.tunnelTargets.set(client, { attachment, authority });
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) client.unshift(head);
    this.awaitRequest(client);
    this.tunnelServer.emit('connection', client);
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const tunnelled = this.tunnelTargets.get(req.socket);
    const attachment = tunnelled?.attachment ?? this.attached.get(req.socket);
    if (attachment === undefined) return void req.socket.destroy();
    this.requestArrived(req.socket);
    // The next request on a kept-alive connection has the same time for its headers.
    res.once('finish', () => {
      if (!req.socket.destroyed) this.awaitRequest(req.socket);
    });
    let url: URL | undefined;
    try {
      url = tunnelled === undefined ? new URL(req.url ?? '') : (req.url ?? '').startsWith('/') ? new URL(`http://${tunnelled.authority}${req.url ?? ''}`) : undefined;
    } catch {
      url = undefined;
    }
    const method = req.method ?? 'GET';
    if (url?.protocol !== 'http:') {
      this.report(attachment, method, url?.hostname ?? '', 0, { refusal: 'bad_request' });
      res.writeHead(400, { connection: 'close' }).end();
      return;
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = url.port === '' ? 80 : Number(url.port);
    const dialled = await this.dial(attachment.policy, host, port);
    this.report(attachment, method, host, port, dialled);
    if (!('socket' in dialled)) {
      const status = dialled.refusal === 'connect_failed' || dialled.refusal === 'resolution_failed' ? 502 : 403;
      res.writeHead(status, { 'x-egress-refused': dialled.refusal, 'content-length': 0 }).end();
      return;
    }
    const socket = dialled.socket;
    // The origin learns the host it was checked as, whatever Host header the plugin wrote.
    const headers = { ...forwardedHeaders(req.headers), host: url.host };
    const upstream = httpRequest({ method, path: `${url.pathname}${url.search}`, headers, createConnection: () => socket });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, forwardedHeaders(answer.headers));
      // Sent at once: a stream whose body comes later (an SSE stream, as MCP's Streamable HTTP opens) would otherwise hold its client waiting for headers the origin already sent.
      res.flushHeaders();
      answer.pipe(res);
    });
    upstream.on('error', () => {
      socket.destroy();
      if (!res.headersSent) res.writeHead(502, { 'content-length': 0 }).end();
      else res.destroy();
    });
    res.on('close', () => socket.destroy());
    req.pipe(upstream);
  }
}
