/**
 * OpenTelemetry spans and metrics of a real host (install, spawn, calls of
 * a real plugin process), seen through the OpenTelemetry SDK's in-memory
 * exporter and a metric reader handed to the host's `telemetry` option;
 * and the gateway's SERVER spans for the calls it serves over HTTP.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { serveGateway } from '../../src/index.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

/** A reader the test collects from when it wants. */
class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

function histogramPoints(metrics: ResourceMetrics, name: string): { attributes: Record<string, unknown>; count: number }[] {
  const found = metrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  return (found?.dataPoints ?? []).map((p) => ({ attributes: p.attributes, count: (p.value as { count: number }).count }));
}

describe('host telemetry', () => {
  it(
    'spans install, spawn and every call with the MCP/GenAI attribute names, and records their durations',
    async () => {
      const exporter = new InMemorySpanExporter();
      const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
      const reader = new CollectingReader();
      const meterProvider = new MeterProvider({ readers: [reader] });
      const host = await pool.installed(await pool.profile(), ['probe'], { telemetry: { tracerProvider, meterProvider } });

      expect((await host.call('plug.host-probe.echo', { text: 'hi' }, { caller: { id: 'alice' } })).isOk()).toBe(true);
      const refused = await host.call('plug.host-probe.wipe', {});
      expect(refused.isErr() && refused.error.code).toBe('PLUGIN_RISK_NOT_ALLOWED');

      const spans = exporter.getFinishedSpans();
      const install = spans.find((s) => s.name === 'mcp_plugin_host.install');
      expect(install?.attributes).toMatchObject({ 'mcp_plugin_host.plugin.id': 'host-probe', 'mcp_plugin_host.plugin.version': '1.0.0' });
      const spawn = spans.find((s) => s.name === 'mcp_plugin_host.spawn');
      expect(spawn?.attributes['mcp_plugin_host.plugin.id']).toBe('host-probe');
      expect(spawn?.attributes['process.pid']).toEqual(expect.any(Number));

      const calls = spans.filter((s) => s.name === 'tools/call echo' || s.name === 'tools/call wipe');
      expect(calls.map((s) => s.name)).toEqual(['tools/call echo', 'tools/call wipe']);
      const [echo, wipe] = calls;
      expect(echo?.kind).toBe(SpanKind.CLIENT);
      expect(echo?.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'echo',
        'mcp_plugin_host.op_id': 'plug.host-probe.echo',
        'mcp_plugin_host.plugin.id': 'host-probe',
        'mcp_plugin_host.caller.id': 'alice',
      });
      expect(echo?.status.code).toBe(SpanStatusCode.UNSET);
      expect(wipe?.attributes['error.type']).toBe('PLUGIN_RISK_NOT_ALLOWED');
      expect(wipe?.status.code).toBe(SpanStatusCode.ERROR);

      const { resourceMetrics } = await reader.collect();
      const callPoints = histogramPoints(resourceMetrics, 'mcp.client.operation.duration');
      expect(callPoints.reduce((sum, p) => sum + p.count, 0)).toBe(2);
      expect(callPoints.find((p) => p.attributes['error.type'] === 'PLUGIN_RISK_NOT_ALLOWED')?.attributes['gen_ai.tool.name']).toBe('wipe');
      expect(histogramPoints(resourceMetrics, 'mcp_plugin_host.install.duration').reduce((sum, p) => sum + p.count, 0)).toBe(1);
      expect(histogramPoints(resourceMetrics, 'mcp_plugin_host.spawn.duration').reduce((sum, p) => sum + p.count, 0)).toBeGreaterThanOrEqual(1);
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
    TIMEOUT_MS,
  );

  it(
    'gives each call the gateway serves a tools/call SERVER span with the client and its MCP session, beside the host CLIENT span, and records mcp.server.operation.duration',
    async () => {
      const exporter = new InMemorySpanExporter();
      const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
      const reader = new CollectingReader();
      const meterProvider = new MeterProvider({ readers: [reader] });
      const telemetry = { tracerProvider, meterProvider };
      const host = await pool.installed(await pool.profile(), ['probe'], { telemetry });
      const token = 'telemetry-token-0123456789abcdef';
      const served = await serveGateway(host, { telemetry, http: { token, port: 0 } });
      if (served.isErr()) throw served.error;
      const client = new Client({ name: 'telemetry-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(served.value.url ?? ''), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      try {
        await client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'traced' } });
        await client.callTool({ name: 'plug.host-probe.wipe', arguments: {} });
      } finally {
        await client.close();
        await served.value.close();
      }

      const spans = exporter.getFinishedSpans();
      const server = spans.filter((s) => s.kind === SpanKind.SERVER);
      expect(server.map((s) => s.name)).toEqual(['tools/call plug.host-probe.echo', 'tools/call plug.host-probe.wipe']);
      expect(server[0]?.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'plug.host-probe.echo',
        'network.transport': 'tcp',
        'mcp.session.id': transport.sessionId,
        'mcp_plugin_host.caller.id': 'default',
      });
      expect(server[1]?.attributes['error.type']).toBe('PLUGIN_RISK_NOT_ALLOWED');
      expect(spans.filter((s) => s.kind === SpanKind.CLIENT).map((s) => s.name)).toEqual(['tools/call echo', 'tools/call wipe']);

      const { resourceMetrics } = await reader.collect();
      expect(histogramPoints(resourceMetrics, 'mcp.server.operation.duration').reduce((sum, p) => sum + p.count, 0)).toBe(2);
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
    TIMEOUT_MS,
  );
});
