/**
 * OpenTelemetry spans and metrics of a host, through `@opentelemetry/api`
 * only: without a provider registered (or passed in) every span is the API's
 * non-recording span and every instrument a no-op, and the host builds no
 * attributes for them. Names follow the OpenTelemetry semantic conventions
 * for MCP and GenAI tool execution where they have one (`tools/call <tool>`
 * CLIENT spans, `mcp.client.operation.duration`, `mcp.method.name`,
 * `gen_ai.tool.name`, `error.type`); install and spawn, which they do not
 * cover, use `mcp_plugin_host.*` names. docs/observability.md lists them.
 */
import {
  context,
  createNoopMeter,
  metrics,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Histogram,
  type MeterProvider,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { ResultAsync, type Result } from 'neverthrow';
import packageJson from '../../package.json' with { type: 'json' };
import type { HostError } from '../errors/HostError.js';

/** The `telemetry` option of `PluginHost.open`: providers to use instead of the globally registered ones. */
export interface HostTelemetryOptions {
  /** Where spans go. Default the global tracer provider (`trace.setGlobalTracerProvider`). */
  readonly tracerProvider?: TracerProvider;
  /** Where metrics go. Default the global meter provider, as registered when the host opens. */
  readonly meterProvider?: MeterProvider;
}

/** The instrumentation scope name of every span and metric of the host. */
export const TELEMETRY_SCOPE = 'mcp-plugin-host';

/** Attribute names the host sets: the semantic conventions' where they exist, else its own. */
export const TELEMETRY_ATTRIBUTES = Object.freeze({
  mcpMethodName: 'mcp.method.name',
  genAiOperationName: 'gen_ai.operation.name',
  genAiToolName: 'gen_ai.tool.name',
  networkTransport: 'network.transport',
  errorType: 'error.type',
  processPid: 'process.pid',
  opId: 'mcp_plugin_host.op_id',
  pluginId: 'mcp_plugin_host.plugin.id',
  pluginVersion: 'mcp_plugin_host.plugin.version',
  pluginShape: 'mcp_plugin_host.plugin.shape',
  installSource: 'mcp_plugin_host.install.source',
  sandboxed: 'mcp_plugin_host.sandboxed',
  callerId: 'mcp_plugin_host.caller.id',
  mcpSessionId: 'mcp.session.id',
});

/** Span and metric names. */
export const TELEMETRY_NAMES = Object.freeze({
  callMethod: 'tools/call',
  executeTool: 'execute_tool',
  installSpan: 'mcp_plugin_host.install',
  spawnSpan: 'mcp_plugin_host.spawn',
  callDuration: 'mcp.client.operation.duration',
  servedCallDuration: 'mcp.server.operation.duration',
  installDuration: 'mcp_plugin_host.install.duration',
  spawnDuration: 'mcp_plugin_host.spawn.duration',
});

/** Shapes whose plugins speak MCP, so that a call is an MCP `tools/call`. */
const MCP_SHAPES: ReadonlySet<string> = new Set(['mcp-plugin', 'esm-module']);

/** What a call span says about the call before it runs. */
export interface CallSpanFacts {
  readonly opId: string;
  readonly toolName: string | undefined;
  readonly pluginId: string | undefined;
  readonly pluginVersion: string | undefined;
  readonly shape: string | undefined;
  readonly callerId: string | undefined;
}

/** What a gateway's server span says about one call it serves. */
export interface ServedCallFacts {
  /** The tool name the client called: an op id. */
  readonly opId: string;
  /** The gateway client's name (`default`, `stdio`, or a configured client). */
  readonly clientName: string;
  readonly transport: 'stdio' | 'http';
  /** The MCP session id, over HTTP. */
  readonly sessionId: string | undefined;
}

function seconds(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}

/** Ends a span with the outcome of its work: `error.type` and an error status for a failure. */
function endSpan(span: Span, outcome: Result<unknown, HostError>, extra?: Attributes): void {
  if (span.isRecording()) {
    if (extra !== undefined) span.setAttributes(extra);
    if (outcome.isErr()) {
      span.setAttribute(TELEMETRY_ATTRIBUTES.errorType, outcome.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
    }
  }
  span.end();
}

/** Runs `work` with `span` as the active span when it records, so that spans started inside it are its children. */
function within<T>(span: Span, work: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
  return span.isRecording() ? context.with(trace.setSpan(context.active(), span), work) : work();
}

/** The spans and instruments of one host. */
export class HostTelemetry {
  readonly #tracer: Tracer;
  readonly #callDuration: Histogram;
  readonly #servedCallDuration: Histogram;
  readonly #installDuration: Histogram;
  readonly #spawnDuration: Histogram;
  /** Whether the meter the host opened with is the API's no-op one (no meter provider registered then): fixed for the host's life. */
  readonly #measuresNothing: boolean;
  /**
   * The global tracer provider while nothing is registered behind it (the
   * API's proxy with no delegate), else undefined. An application may
   * register a provider after the host opened, so each call asks the proxy
   * again until it has a delegate.
   */
  #idleTracerProxy: ProxyTracerProvider | undefined;

  constructor(options: HostTelemetryOptions = {}) {
    const tracerProvider = options.tracerProvider ?? trace.getTracerProvider();
    this.#tracer = tracerProvider.getTracer(TELEMETRY_SCOPE, packageJson.version);
    this.#idleTracerProxy = tracerProvider instanceof ProxyTracerProvider ? tracerProvider : undefined;
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(TELEMETRY_SCOPE, packageJson.version);
    this.#callDuration = meter.createHistogram(TELEMETRY_NAMES.callDuration, { unit: 's', description: 'Duration of a host call to a plugin tool, as the host (the MCP client) sees it.' });
    this.#servedCallDuration = meter.createHistogram(TELEMETRY_NAMES.servedCallDuration, { unit: 's', description: 'Duration of a tools/call the gateway serves, as the gateway (the MCP server) sees it.' });
    this.#installDuration = meter.createHistogram(TELEMETRY_NAMES.installDuration, { unit: 's', description: 'Duration of an install, checks and canary included.' });
    this.#spawnDuration = meter.createHistogram(TELEMETRY_NAMES.spawnDuration, { unit: 's', description: 'Time from asking for a plugin process to having it started in its sandbox.' });
    // The API's no-op meter hands out one shared no-op histogram; a real meter never does.
    this.#measuresNothing = this.#callDuration === createNoopMeter().createHistogram(TELEMETRY_NAMES.callDuration);
  }

  /**
   * Whether a call's span and duration would go nowhere: no meter, and no
   * tracer behind the global proxy yet. Then a call runs its work as it is,
   * without the span's name, attributes, non-recording span, clock reads and
   * the reaction that ends them (about 0.4 µs and 0.6 KB of garbage a call
   * on the warm path, twice for a gateway call); a caller may skip building
   * the facts too.
   */
  observesNothing(): boolean {
    if (!this.#measuresNothing) return false;
    const proxy = this.#idleTracerProxy;
    if (proxy === undefined) return false;
    if (proxy.getDelegateTracer(TELEMETRY_SCOPE, packageJson.version) === undefined) return true;
    this.#idleTracerProxy = undefined;
    return false;
  }

  /** Runs one call inside a `tools/call <tool>` CLIENT span and records its duration. */
  call<T>(facts: CallSpanFacts, work: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    if (this.observesNothing()) return work();
    const A = TELEMETRY_ATTRIBUTES;
    const toolName = facts.toolName ?? facts.opId;
    const mcp = facts.shape === undefined || MCP_SHAPES.has(facts.shape);
    const span = this.#tracer.startSpan(`${TELEMETRY_NAMES.callMethod} ${toolName}`, {
      kind: SpanKind.CLIENT,
      attributes: { [A.genAiOperationName]: TELEMETRY_NAMES.executeTool, [A.genAiToolName]: toolName, ...(mcp ? { [A.mcpMethodName]: TELEMETRY_NAMES.callMethod } : {}) },
    });
    if (span.isRecording()) {
      span.setAttributes({
        [A.opId]: facts.opId,
        [A.networkTransport]: 'pipe',
        ...(facts.pluginId === undefined ? {} : { [A.pluginId]: facts.pluginId }),
        ...(facts.pluginVersion === undefined ? {} : { [A.pluginVersion]: facts.pluginVersion }),
        ...(facts.shape === undefined ? {} : { [A.pluginShape]: facts.shape }),
        ...(facts.callerId === undefined ? {} : { [A.callerId]: facts.callerId }),
      });
    }
    const startedAt = performance.now();
    return this.#settle(within(span, work), (outcome) => {
      this.#callDuration.record(seconds(startedAt), {
        [A.genAiOperationName]: TELEMETRY_NAMES.executeTool,
        [A.genAiToolName]: toolName,
        ...(mcp ? { [A.mcpMethodName]: TELEMETRY_NAMES.callMethod } : {}),
        ...(facts.pluginId === undefined ? {} : { [A.pluginId]: facts.pluginId }),
        ...(outcome.isErr() ? { [A.errorType]: outcome.error.code } : {}),
      });
      endSpan(span, outcome);
    });
  }

  /**
   * Runs one `tools/call` a gateway serves inside a `tools/call <op id>`
   * SERVER span (the host's CLIENT span of the same call becomes its child
   * where a context manager is registered) and records its duration.
   */
  served<T>(facts: ServedCallFacts, work: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    if (this.observesNothing()) return work();
    const A = TELEMETRY_ATTRIBUTES;
    const transport = facts.transport === 'http' ? 'tcp' : 'pipe';
    const span = this.#tracer.startSpan(`${TELEMETRY_NAMES.callMethod} ${facts.opId}`, {
      kind: SpanKind.SERVER,
      attributes: { [A.mcpMethodName]: TELEMETRY_NAMES.callMethod, [A.genAiOperationName]: TELEMETRY_NAMES.executeTool, [A.genAiToolName]: facts.opId },
    });
    if (span.isRecording()) {
      span.setAttributes({ [A.networkTransport]: transport, [A.callerId]: facts.clientName, ...(facts.sessionId === undefined ? {} : { [A.mcpSessionId]: facts.sessionId }) });
    }
    const startedAt = performance.now();
    return this.#settle(within(span, work), (outcome) => {
      this.#servedCallDuration.record(seconds(startedAt), {
        [A.mcpMethodName]: TELEMETRY_NAMES.callMethod,
        [A.genAiOperationName]: TELEMETRY_NAMES.executeTool,
        [A.genAiToolName]: facts.opId,
        [A.networkTransport]: transport,
        ...(outcome.isErr() ? { [A.errorType]: outcome.error.code } : {}),
      });
      endSpan(span, outcome);
    });
  }

  /** Runs one install inside an `mcp_plugin_host.install` span and records its duration. */
  install<T extends { readonly plugin: { readonly name: string; readonly version: string } }>(source: string, work: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    const A = TELEMETRY_ATTRIBUTES;
    const span = this.#tracer.startSpan(TELEMETRY_NAMES.installSpan, { kind: SpanKind.INTERNAL });
    if (span.isRecording()) span.setAttribute(A.installSource, source);
    const startedAt = performance.now();
    return this.#settle(within(span, work), (outcome) => {
      this.#installDuration.record(seconds(startedAt), outcome.isErr() ? { [A.errorType]: outcome.error.code } : {});
      endSpan(span, outcome, outcome.isOk() ? { [A.pluginId]: outcome.value.plugin.name, [A.pluginVersion]: outcome.value.plugin.version } : undefined);
    });
  }

  /** Runs one process start inside an `mcp_plugin_host.spawn` span and records its duration. */
  spawn<T extends { readonly pid: number }>(pluginId: string, sandboxed: boolean, work: () => ResultAsync<T, HostError>): ResultAsync<T, HostError> {
    const A = TELEMETRY_ATTRIBUTES;
    const span = this.#tracer.startSpan(TELEMETRY_NAMES.spawnSpan, { kind: SpanKind.INTERNAL });
    if (span.isRecording()) span.setAttributes({ [A.pluginId]: pluginId, [A.sandboxed]: sandboxed });
    const startedAt = performance.now();
    return this.#settle(within(span, work), (outcome) => {
      this.#spawnDuration.record(seconds(startedAt), { [A.pluginId]: pluginId, ...(outcome.isErr() ? { [A.errorType]: outcome.error.code } : {}) });
      endSpan(span, outcome, outcome.isOk() ? { [A.processPid]: outcome.value.pid } : undefined);
    });
  }

  /** One reaction on the work's own promise, not an async function awaiting it: a warm call pays for each promise hop. */
  #settle<T>(work: ResultAsync<T, HostError>, done: (outcome: Result<T, HostError>) => void): ResultAsync<T, HostError> {
    return new ResultAsync(
      Promise.resolve(
        work.then<Result<T, HostError>, never>((outcome) => {
          done(outcome);
          return outcome;
        }),
      ),
    );
  }
}
