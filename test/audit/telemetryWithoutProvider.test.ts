/**
 * HostTelemetry when nothing observes it: a call runs its work as it is
 * (no span, no duration), and the spans and durations start as soon as
 * something would see them, also when the application registers its global
 * tracer provider after the host opened.
 */
import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { errAsync, okAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { hostError } from '../../src/errors/HostError.js';
import { HostTelemetry } from '../../src/observability/telemetry.js';

class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const FACTS = { opId: 'plug.hello.hello', toolName: 'hello', pluginId: 'hello', pluginVersion: '1.0.0', shape: 'mcp-plugin', callerId: undefined };
const SERVED = { opId: 'plug.hello.hello', clientName: 'stdio', transport: 'stdio' as const, sessionId: undefined };

afterEach(() => {
  trace.disable();
  metrics.disable();
});

describe('HostTelemetry without a provider', () => {
  it('observes nothing and hands back the work itself, its outcome untouched', async () => {
    const telemetry = new HostTelemetry();
    expect(telemetry.observesNothing()).toBe(true);
    const work = okAsync<string, never>('done');
    expect(telemetry.call(FACTS, () => work)).toBe(work);
    expect(telemetry.served(SERVED, () => work)).toBe(work);
    const failed = await telemetry.call(FACTS, () => errAsync(hostError('PLUGIN_TIMEOUT', 'late')));
    expect(failed._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
  });

  it('spans the calls once a global tracer provider is registered after the host opened', async () => {
    const telemetry = new HostTelemetry();
    expect((await telemetry.call(FACTS, () => okAsync(1)))._unsafeUnwrap()).toBe(1);
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    expect(telemetry.observesNothing()).toBe(false);
    await telemetry.call(FACTS, () => okAsync(2));
    await telemetry.served(SERVED, () => okAsync(3));
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['tools/call hello', 'tools/call plug.hello.hello']);
    await provider.shutdown();
  });

  it('records durations with a meter and no tracer, passed in or registered before the host opened', async () => {
    for (const passed of [true, false]) {
      const reader = new CollectingReader();
      const meterProvider = new MeterProvider({ readers: [reader] });
      if (!passed) expect(metrics.setGlobalMeterProvider(meterProvider)).toBe(true);
      const telemetry = new HostTelemetry(passed ? { meterProvider } : {});
      expect(telemetry.observesNothing()).toBe(false);
      await telemetry.call(FACTS, () => okAsync(1));
      await telemetry.served(SERVED, () => okAsync(1));
      const names = (await reader.collect()).resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => m.descriptor.name);
      expect(names.sort()).toEqual(['mcp.client.operation.duration', 'mcp.server.operation.duration']);
      await meterProvider.shutdown();
      metrics.disable();
    }
  });

  it('spans with a tracer provider passed in, whatever is registered globally', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const telemetry = new HostTelemetry({ tracerProvider });
    expect(telemetry.observesNothing()).toBe(false);
    await telemetry.call(FACTS, () => okAsync(1));
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    await tracerProvider.shutdown();
  });
});
