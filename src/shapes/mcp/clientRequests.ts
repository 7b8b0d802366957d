/**
 * Requests an MCP-speaking plugin sends to its client (the host):
 * `sampling/createMessage`, `elicitation/create` and `roots/list`. The host
 * application answers them through callbacks; the plugin may send only the
 * kinds its manifest declares (the host advertises those at `initialize`
 * and answers nothing else), and only a callback in force answers one.
 *
 * MCP over stdio does not say which `tools/call` a request belongs to, so it
 * is attributed to the host's requests in flight at that moment: tool calls
 * and the requests beyond tools that bring their own handlers, else (none in
 * flight) the requests beyond tools only the application asks (prompts/get,
 * resources/read, completions; not lists, subscriptions or the log level,
 * which a plugin provokes itself). The party whose requests they are answers
 * it (a call's or request's own handlers, else the host's), and a request
 * that arrives while requests of several parties are in flight is refused. So
 * is a sampling or elicitation request with nothing in flight: no request of
 * the host caused it, and the application's model and user are not the
 * plugin's to use at will (a `roots/list` is still answered: it reads what
 * the host set). Its answer may
 * take at most the host's client-request timeout, and no longer than those
 * requests last: the time counts against the call that caused it, whose own
 * timeout keeps running meanwhile.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  ListRootsRequestSchema,
  ListRootsResultSchema,
  McpError,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
  type ListRootsRequest,
  type ListRootsResult,
} from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_REQUEST_METHODS } from '../../manifest/clientRequestKinds.js';
import type { ClientRequestKind } from '../../manifest/model.js';
import type { Clock, Logger } from '../../ports/ports.js';
import clientRequestLimits from '../../../etc/client-requests.json' with { type: 'json' };

/** What a client-request callback is told besides the request itself. */
export interface ClientRequestContext {
  /** The plugin that sent the request. */
  readonly plugin_id: string;
  /** The operation whose call the request is attributed to, when exactly one call was in flight. */
  readonly op_id?: string;
  /**
   * The host's request to the plugin beyond tools that the request is
   * attributed to, when exactly that one was in flight: its method
   * (`prompts/get`, `resources/read` or `completion/complete`, when no tool call is in flight) and
   * the prompt name or resource URI it named, as the plugin knows them.
   */
  readonly cause?: {
    /** The MCP method the host sent. */
    readonly method: string;
    /** The prompt it named (`prompts/get`, a completion of a prompt argument). */
    readonly name?: string;
    /** The resource it named (`resources/read`, a completion of a resource template argument). */
    readonly uri?: string;
  };
  /**
   * Aborted when the answer is no longer wanted: the time for it ran out,
   * the call that caused it ended (or timed out), or the plugin withdrew it.
   */
  readonly signal: AbortSignal;
  /** The most time the answer may take, in ms (for requests the callback makes on its own). */
  readonly timeoutMs: number;
}

/** A host request to a plugin beyond tools, as a client request attributed to it names it. */
export type ClientRequestCause = NonNullable<ClientRequestContext['cause']>;

/** Answers a plugin's `sampling/createMessage`: a message from the application's model. */
export type SamplingCallback = (params: CreateMessageRequest['params'], context: ClientRequestContext) => CreateMessageResult | Promise<CreateMessageResult>;

/** Answers a plugin's `elicitation/create`: the user's `accept` (with content), `decline` or `cancel`. */
export type ElicitationCallback = (params: ElicitRequest['params'], context: ClientRequestContext) => ElicitResult | Promise<ElicitResult>;

/** Answers a plugin's `roots/list`: the roots the plugin may work in. */
export type RootsCallback = (params: ListRootsRequest['params'], context: ClientRequestContext) => ListRootsResult | Promise<ListRootsResult>;

/**
 * The callbacks that answer plugins' requests to their client, for a whole
 * host (`PluginHostOptions.clientRequests`) or one call
 * (`HostCallOptions.clientRequests`). A kind without a callback is refused
 * at once with a JSON-RPC error, as is any kind the plugin does not declare.
 * A callback that throws, rejects or returns a malformed answer refuses the
 * request with a JSON-RPC error that does not carry its message.
 */
export interface ClientRequestHandlers {
  /** Answers `sampling/createMessage`. */
  readonly sampling?: SamplingCallback;
  /** Answers `elicitation/create` (form mode). */
  readonly elicitation?: ElicitationCallback;
  /** Answers `roots/list`. */
  readonly roots?: RootsCallback;
  /**
   * Who answers. Calls whose handlers name the same caller are one party, so
   * a request that arrives while several of its calls are in flight is still
   * answered. Default: each handlers object is a party of its own.
   */
  readonly caller?: string;
}

/** How one client request of a declared kind ended, for the host's `client_request` event. */
export interface ClientRequestReport {
  /** The MCP method: `sampling/createMessage`, `elicitation/create` or `roots/list`. */
  readonly method: string;
  /** The operation the request was attributed to, when exactly one call was in flight. */
  readonly op_id?: string;
  /**
   * `answered` by a callback; `refused` at once (no callback, calls of
   * several callers in flight, or a sampling or elicitation request with no
   * request of the host in flight); `abandoned` when the time ran out, the call
   * ended or the plugin withdrew it; `failed` when the callback threw or
   * answered something malformed.
   */
  readonly outcome: 'answered' | 'refused' | 'abandoned' | 'failed';
  /** The JSON-RPC error code the plugin got, when it got one. */
  readonly error_code?: number;
  /** From the request's arrival to its answer, in ms. */
  readonly duration_ms: number;
}

/** What a session needs to answer its plugin's client requests. */
export interface ClientRequestSettings {
  /** The plugin's id, passed to every callback. */
  readonly pluginId: string;
  /** The kinds its manifest declares (narrowed by the install grant): the only ones advertised and answered. */
  readonly kinds: readonly ClientRequestKind[];
  /** The host's callbacks, answering when a call brings none of its own. */
  readonly handlers: ClientRequestHandlers | undefined;
  /** The most time one answer may take, in ms. */
  readonly timeoutMs: number;
  /** Told how each request of a declared kind ended. */
  readonly onReport?: (report: ClientRequestReport) => void;
}

/** Who answers client requests during one call, as the call's options carry it. */
export interface CallClientRequests {
  /** The call's own callbacks; absent: the host's. */
  readonly handlers?: ClientRequestHandlers;
  /** The operation called, told to the callbacks. */
  readonly opId?: string;
}

/** The client capabilities a session announces at `initialize`: exactly the declared kinds. */
export function clientCapabilities(settings: Pick<ClientRequestSettings, 'kinds'> | undefined): ClientCapabilities {
  const kinds = new Set(settings?.kinds ?? []);
  return {
    ...(kinds.has('sampling') ? { sampling: {} } : {}),
    ...(kinds.has('elicitation') ? { elicitation: {} } : {}),
    ...(kinds.has('roots') ? { roots: {} } : {}),
  };
}

interface CallEntry {
  readonly party: unknown;
  readonly handlers: ClientRequestHandlers | undefined;
  readonly opId: string | undefined;
  /** The host request beyond tools it is; undefined for a tool call. */
  readonly cause: ClientRequestCause | undefined;
  /** Told when the call ends; filled only when a request is attributed to it. */
  readonly onEnd: (() => void)[];
}

/** Whose request it is: the handlers that answer it and the calls it may not outlive. */
interface Attribution {
  readonly handlers: ClientRequestHandlers | undefined;
  readonly opId: string | undefined;
  readonly cause: ClientRequestCause | undefined;
  /** Aborted once every call in flight when the request came has ended. */
  readonly ended: AbortSignal;
  /**
   * Stops listening for those calls' end, once the request is answered or refused: a call may carry any number of
   * requests one after another, and each one's listener would stay with it until it ends (review R5 F4).
   */
  readonly release: () => void;
}

const HOST_PARTY = Symbol('host');
const NOTHING_TO_LEAVE = (): void => undefined;

/** The calls in flight on one connection, with the party each belongs to. */
export class CallsInFlight {
  readonly #calls = new Set<CallEntry>();
  readonly #tracking: boolean;

  /** `tracking` false (a plugin that declares no client request) keeps no books: nothing is ever attributed. */
  constructor(tracking: boolean) {
    this.#tracking = tracking;
  }

  /** How many answers still listen for the end of a call in flight (none once each is answered or refused). */
  get listening(): number {
    let count = 0;
    for (const call of this.#calls) count += call.onEnd.length;
    return count;
  }

  /** Records a call until the returned function is called. */
  enter(requests: CallClientRequests | undefined): () => void {
    const handlers = requests?.handlers;
    return this.#enter({ party: handlers?.caller ?? handlers ?? HOST_PARTY, handlers, opId: requests?.opId, cause: undefined, onEnd: [] });
  }

  /**
   * Records a host request beyond tools that only the application asks
   * (prompts/get, resources/read, a completion) until the returned function
   * is called: a server may sample or elicit while answering one, and the
   * request's own `handlers` (else the host's) answer that as part of it.
   * Without handlers of its own it counts only when no tool call is in
   * flight (see {@link CallsInFlight.attribute}).
   */
  enterRequest(cause: ClientRequestCause, handlers?: ClientRequestHandlers): () => void {
    return this.#enter({ party: handlers?.caller ?? handlers ?? HOST_PARTY, handlers, opId: undefined, cause, onEnd: [] });
  }

  #enter(entry: CallEntry): () => void {
    if (!this.#tracking) return NOTHING_TO_LEAVE;
    this.#calls.add(entry);
    return () => {
      this.#calls.delete(entry);
      // Most calls have no one to tell: splice(0) would make an empty array for each of them.
      if (entry.onEnd.length > 0) for (const told of entry.onEnd.splice(0)) told();
    };
  }

  /**
   * The party a request arriving now belongs to: of the tool calls in flight, else of the host's requests beyond
   * tools; `several` when those are of several parties, `none` when nothing is in flight.
   */
  attribute(): Attribution | 'several' | 'none' {
    // Tool calls first: the host's own requests beyond tools (those without handlers of their own) count only when no
    // tool call is in flight. An application gets prompts at a plugin for its own purposes at any time, so counting
    // them next to a tool call would make that call's own sampling "several callers" and refuse it (review R4 F6); a
    // tool call in flight is the likelier cause, and its handlers answer as they did before requests beyond tools
    // counted. A request beyond tools that brings its own handlers (a gateway client's prompts/get) is a party like a
    // call: next to another party's call the request cannot be attributed, and handing it to the call's party would
    // show one gateway client what another's prompt asked.
    const all = [...this.#calls];
    const claimed = all.filter((c) => c.cause === undefined || c.handlers !== undefined);
    const calls = claimed.length > 0 ? claimed : all;
    const first = calls[0];
    if (first === undefined) return 'none';
    if (calls.some((c) => c.party !== first.party)) return 'several';
    const ended = new AbortController();
    let open = calls.length;
    const told = (): void => {
      if (--open === 0) ended.abort();
    };
    for (const call of calls) call.onEnd.push(told);
    const release = (): void => {
      for (const call of calls) {
        const at = call.onEnd.lastIndexOf(told);
        if (at !== -1) call.onEnd.splice(at, 1);
      }
    };
    // Of several calls of one party, the newest carries handlers bound to a request still open.
    const newest = calls[calls.length - 1] ?? first;
    const one = calls.length === 1;
    return { handlers: newest.handlers, opId: one ? first.opId : undefined, cause: one ? first.cause : undefined, ended: ended.signal, release };
  }
}

type Callback<P, R> = (params: P, context: ClientRequestContext) => R | Promise<R>;

/** The timer-or-end race of one answer: rejects when `signal` aborts, else settles as `work` does. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Why an answer was abandoned, as the plugin's JSON-RPC error says it. */
class Abandoned extends Error {}

/** A request that got a JSON-RPC error instead of an answer, with what its report says. */
class Refusal extends Error {
  constructor(
    readonly outcome: Exclude<ClientRequestReport['outcome'], 'answered'>,
    readonly opId: string | undefined,
    readonly error: McpError,
  ) {
    super(error.message);
  }
}

/**
 * Installs the request handlers of the declared kinds on `client` (before it
 * connects). Undeclared kinds get no handler: the SDK answers them with
 * `Method not found`, as for any method a client does not serve.
 */
export function answerClientRequests(client: Client, settings: ClientRequestSettings | undefined, calls: CallsInFlight, clock: Clock, logger: Logger): void {
  if (settings === undefined || settings.kinds.length === 0) return;
  const report = (method: string, started: number, opId: string | undefined, outcome: ClientRequestReport['outcome'], error?: McpError): void => {
    try {
      settings.onReport?.({
        method,
        ...(opId === undefined ? {} : { op_id: opId }),
        outcome,
        ...(error === undefined ? {} : { error_code: error.code }),
        duration_ms: clock.now() - started,
      });
    } catch (failure) {
      logger.warn({ plugin_id: settings.pluginId, method, error: String(failure) }, 'client request report listener threw');
    }
  };
  // Requests of this process waiting for a callback: a plugin may not turn one call into any number of concurrent asks of the application's model or user.
  let inFlight = 0;
  const answer = async <P, R>(kind: ClientRequestKind, params: P, pluginSignal: AbortSignal, pick: (h: ClientRequestHandlers) => Callback<P, R> | undefined): Promise<R> => {
    const method = CLIENT_REQUEST_METHODS[kind];
    const started = clock.now();
    try {
      if (inFlight >= clientRequestLimits.maxInFlightPerProcess) {
        throw new Refusal('refused', undefined, new McpError(ErrorCode.InvalidRequest, `${method} refused: ${clientRequestLimits.maxInFlightPerProcess} requests of this plugin already wait for an answer`));
      }
      inFlight += 1;
      let answered: { value: R; opId: string | undefined };
      try {
        answered = await answerOnce(kind, method, params, pluginSignal, pick);
      } finally {
        inFlight -= 1;
      }
      report(method, started, answered.opId, 'answered');
      return answered.value;
    } catch (error) {
      const refusal = error instanceof Refusal ? error : undefined;
      const mcpError = refusal?.error ?? (error instanceof McpError ? error : new McpError(ErrorCode.InternalError, `the host application could not answer ${method}`));
      report(method, started, refusal?.opId, refusal?.outcome ?? 'failed', mcpError);
      throw mcpError;
    }
  };
  const answerOnce = async <P, R>(
    kind: ClientRequestKind,
    method: string,
    params: P,
    pluginSignal: AbortSignal,
    pick: (h: ClientRequestHandlers) => Callback<P, R> | undefined,
  ): Promise<{ value: R; opId: string | undefined }> => {
    const found = calls.attribute();
    if (found === 'several') {
      throw new Refusal('refused', undefined, new McpError(ErrorCode.InvalidRequest, `${method} arrived while calls of several callers were in flight; the host cannot tell whose it is`));
    }
    // Between calls only roots/list, a read of what the host set, is answered: a sampling or elicitation request
    // nothing the host asked caused would spend the application's model or prompt its user at the plugin's will.
    if (found === 'none' && kind !== 'roots') {
      throw new Refusal('refused', undefined, new McpError(ErrorCode.InvalidRequest, `${method} refused: no request of the host is in flight at this plugin, so nothing the host asked caused it`));
    }
    const attributed = found === 'none' ? undefined : found;
    const opId = attributed?.opId;
    const cause = attributed?.cause;
    const handlers = attributed?.handlers ?? settings.handlers;
    const callback = handlers === undefined ? undefined : pick(handlers);
    if (callback === undefined) {
      attributed?.release();
      // Handlers the request in flight brought (a gateway client's, a canary's none) are not the application's: say whose are missing.
      const whose = attributed?.handlers === undefined ? 'the host application has' : 'the request in flight brings';
      throw new Refusal('refused', opId, new McpError(ErrorCode.MethodNotFound, `${method} is not answered here: ${whose} no ${kind} callback`));
    }
    const deadline = new AbortController();
    const cancelTimer = clock.setTimer(() => deadline.abort(new Abandoned(`no answer within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    const ended = attributed?.ended;
    const signals = [pluginSignal, deadline.signal];
    if (ended !== undefined) signals.push(ended);
    const signal = AbortSignal.any(signals);
    const context: ClientRequestContext = {
      plugin_id: settings.pluginId,
      ...(opId === undefined ? {} : { op_id: opId }),
      ...(cause === undefined ? {} : { cause }),
      signal,
      timeoutMs: settings.timeoutMs,
    };
    try {
      return { value: await untilAborted(Promise.resolve().then(() => callback(params, context)), signal), opId };
    } catch (error) {
      if (signal.aborted) {
        const why = deadline.signal.aborted ? (deadline.signal.reason as Error).message : ended?.aborted === true ? 'the call that caused it ended' : 'the plugin withdrew it';
        throw new Refusal('abandoned', opId, new McpError(ErrorCode.RequestTimeout, `${method} was not answered: ${why}`));
      }
      if (error instanceof McpError) throw new Refusal('failed', opId, error);
      // The application's own failure stays in the host's log: its text is not the plugin's business.
      logger.warn({ plugin_id: settings.pluginId, method, error: String(error) }, 'client request callback failed');
      throw new Refusal('failed', opId, new McpError(ErrorCode.InternalError, `the host application could not answer ${method}`));
    } finally {
      cancelTimer();
      attributed?.release();
    }
  };
  const kinds = new Set(settings.kinds);
  if (kinds.has('sampling')) {
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) => answer('sampling', request.params, extra.signal, (h) => h.sampling));
  }
  if (kinds.has('elicitation')) {
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => answer('elicitation', request.params, extra.signal, (h) => h.elicitation));
  }
  if (kinds.has('roots')) {
    const listRoots = (params: ListRootsRequest['params'], context: ClientRequestContext, roots: RootsCallback): Promise<ListRootsResult> =>
      Promise.resolve(roots(params, context)).then((answered) => {
        const listed = ListRootsResultSchema.safeParse(answered);
        if (!listed.success) throw new McpError(ErrorCode.InternalError, 'the host application answered roots/list with something that is not a list of roots');
        return listed.data;
      });
    client.setRequestHandler(ListRootsRequestSchema, (request, extra) =>
      answer('roots', request.params, extra.signal, (h) => {
        const roots = h.roots;
        return roots === undefined ? undefined : (params, context) => listRoots(params, context, roots);
      }),
    );
  }
}
