/**
 * The gateway's stdio side, where `tools/call` takes the fast path (its
 * frame parsed once, no SDK server schemas): every guarantee the SDK path
 * gave still holds. `serveGateway` runs in this process on a pair of
 * streams, the SDK's own Client speaks to it over them (or a test writes
 * raw frames), and the plugins run in bubblewrap: mcp-faulty (progress,
 * cancellation, argument schemas, a large answer), host-callbacks (a
 * high_stakes_write confirmation, a sampling request) and host-deep (an
 * answer nested too deep).
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { AuditRecord } from '../../src/audit/auditRecord.js';
import { serveGateway, type GatewayHandle, type GatewayOptions, type PluginHost, type PluginHostOptions } from '../../src/index.js';
import { callbackPackage, removeCallbackPackages } from '../callbacks/callbackPlugin.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const ERROR_META = 'io.github.mcp-plugin-host/error';
const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins');

const pool = new HostPool();
const gateways: GatewayHandle[] = [];
const clients: Client[] = [];
const built: string[] = [];
let profileDir = '';

/** mcp-faulty with a request schema for `echo` in its manifest (schema_ref): the host checks the arguments before the plugin sees them. */
async function faultyWithEchoSchema(): Promise<string> {
  const dir = await packageFixturePlugin(join(FIXTURES, 'mcp-faulty'), { bundle: ['bin/mcp-faulty.mjs'] });
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as { advertised_tools: Record<string, unknown>[] };
  manifest.advertised_tools = manifest.advertised_tools.map((t) => (t.name === 'echo' ? { ...t, schema_ref: 'mcp-faulty.echo' } : t));
  await writeFile(path, JSON.stringify(manifest));
  await mkdir(join(dir, 'schemas'));
  const bundle = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $defs: { request: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } }, response: { type: 'object' } },
  };
  await writeFile(join(dir, 'schemas', 'mcp-faulty.echo.json'), JSON.stringify(bundle));
  return dir;
}

beforeAll(async () => {
  profileDir = await pool.profile();
  const installer = await pool.open(profileDir);
  const faulty = await faultyWithEchoSchema();
  const deep = await packageFixturePlugin(join(FIXTURES, 'host-deep'), {});
  built.push(faulty, deep);
  for (const pkg of [faulty, deep, await callbackPackage()]) (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
  await installer.close();
}, TIMEOUT_MS);
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});
afterAll(async () => {
  await pool.cleanup();
  await removeCallbackPackages();
  await Promise.all(built.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** The two ends of a stdio gateway as its client sees them. */
interface StdioEnds {
  /** What the client writes (the gateway's stdin). */
  readonly toGateway: PassThrough;
  /** What the gateway writes (its stdout). */
  readonly fromGateway: PassThrough;
}

async function stdioGateway(host: PluginHost, options: Omit<GatewayOptions, 'stdio'> = {}): Promise<StdioEnds> {
  const ends = { toGateway: new PassThrough(), fromGateway: new PassThrough() };
  const served = await serveGateway(host, { ...options, stdio: { stdin: ends.toGateway, stdout: ends.fromGateway } });
  if (served.isErr()) throw served.error;
  gateways.push(served.value);
  return ends;
}

/** The SDK's Client on a stdio gateway's streams (the SDK's stdio server transport is a plain line transport on two streams). */
async function sdkClient(ends: StdioEnds, capabilities: ConstructorParameters<typeof Client>[1] = {}, setUp: (client: Client) => void = () => undefined): Promise<Client> {
  const client = new Client({ name: 'stdio-fast-path-test', version: '1.0.0' }, capabilities);
  setUp(client);
  await client.connect(new StdioServerTransport(ends.fromGateway, ends.toGateway));
  clients.push(client);
  return client;
}

/** Writes raw lines and collects the gateway's answers by id. */
function rawClient(ends: StdioEnds): { send(line: string): void; answer(id: unknown): Promise<Record<string, unknown>>; answered(id: unknown): boolean } {
  const answers: Record<string, unknown>[] = [];
  let pending = '';
  ends.fromGateway.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
      answers.push(JSON.parse(pending.slice(0, nl)) as Record<string, unknown>);
      pending = pending.slice(nl + 1);
    }
  });
  return {
    send: (line) => void ends.toGateway.write(`${line}\n`),
    answer: async (id) => {
      await waitUntil(() => answers.some((a) => a.id === id), 30_000);
      return answers.find((a) => a.id === id) ?? {};
    },
    answered: (id) => answers.some((a) => a.id === id),
  };
}

const codeOf = (result: CallToolResult): unknown => (result._meta?.[ERROR_META] as { code?: unknown } | undefined)?.code;
const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');
const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> => (await client.callTool({ name, arguments: args })) as CallToolResult;
const rawCall = (id: number, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } });

function openHost(options: PluginHostOptions = {}): Promise<PluginHost> {
  return pool.open(profileDir, options);
}

describe('tools/call over the stdio fast path', () => {
  it(
    'keeps the client filter and the op-id names, checks arguments against the tool schema, and answers other calls',
    async () => {
      const client = await sdkClient(await stdioGateway(await openHost(), { policy: { deny: ['plug.mcp-faulty.big'] } }));
      expect(JSON.parse(textOf(await call(client, 'plug.mcp-faulty.echo', { message: 'fast' })))).toMatchObject({ message: 'fast' });
      // Denied to this client: refused before the plugin sees it.
      expect(codeOf(await call(client, 'plug.mcp-faulty.big', { bytes: 1 }))).toBe('VARIANT_NOT_FOUND');
      // The plugin's own name is not an op id.
      expect(codeOf(await call(client, 'echo', { message: 'x' }))).toBe('VARIANT_NOT_FOUND');
      expect(codeOf(await call(client, 'plug.mcp-faulty.echo', { message: 42 }))).toBe('INVALID_ARGS');
    },
    TIMEOUT_MS,
  );

  it(
    'asks the stdio client to confirm a high_stakes_write by elicitation, forwards the plugin’s sampling to it, and refuses without elicitation',
    async () => {
      const host = await openHost();
      const asked: string[] = [];
      const able = await sdkClient(await stdioGateway(host, { policy: { maxRisk: 'write' } }), { capabilities: { sampling: {}, elicitation: {} } }, (client) => {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message.split('\n')[0] ?? '');
          return { action: 'accept', content: { confirm: true } };
        });
        client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'from the stdio client' }, model: 'stdio-model' }));
      });
      const erased = await call(able, 'plug.host-callbacks.erase_notes', {});
      expect(erased.isError, JSON.stringify(erased)).not.toBe(true);
      expect(asked).toEqual(['plug.host-callbacks.erase_notes is a high-stakes write operation of plugin host-callbacks. Run it with these arguments?']);
      expect(JSON.parse(textOf(await call(able, 'plug.host-callbacks.ask_model', { question: 'who?' })))).toMatchObject({ model: 'stdio-model' });

      const unable = await sdkClient(await stdioGateway(host, { policy: { maxRisk: 'write' } }));
      expect(codeOf(await call(unable, 'plug.host-callbacks.erase_notes', {}))).toBe('PLUGIN_CONFIRMATION_UNAVAILABLE');
    },
    TIMEOUT_MS,
  );

  it(
    'passes progress to the client under its own token and forwards its cancellation to the plugin',
    async () => {
      const host = await openHost();
      const stderr: string[] = [];
      const started: string[] = [];
      const ended: (string | undefined)[] = [];
      host.events.on('stderr', (line) => stderr.push(line.line));
      host.events.on('call:start', (call) => started.push(call.op_id));
      host.events.on('call:end', (call) => ended.push(call.code));
      const client = await sdkClient(await stdioGateway(host));
      const progress: Progress[] = [];
      const slow = (await client.callTool({ name: 'plug.mcp-faulty.slow', arguments: { steps: 3, intervalMs: 20 } }, undefined, { onprogress: (p) => progress.push(p) })) as CallToolResult;
      expect(JSON.parse(textOf(slow))).toEqual({ done: 3 });
      expect(progress.map((p) => p.message)).toEqual(['step 1', 'step 2', 'step 3']);

      const abort = new AbortController();
      const hanging = client.callTool({ name: 'plug.mcp-faulty.hang', arguments: {} }, undefined, { signal: abort.signal }).catch((error: unknown) => error);
      await waitUntil(() => started.includes('plug.mcp-faulty.hang'), 30_000);
      abort.abort('the user gave up');
      await waitUntil(() => stderr.some((line) => line.startsWith('received notifications/cancelled ')), 30_000);
      expect(await hanging).toBeDefined();
      // The host call ended as cancelled by its caller, not by a timeout of its own.
      await waitUntil(() => ended.length === 2, 30_000);
      expect(ended[1]).toBe('PLUGIN_CANCELLED');

      // A cancelled request gets no answer at all, as from the SDK server; the next one does.
      const raw = rawClient(await stdioGateway(host));
      raw.send(rawCall(9, 'plug.mcp-faulty.hang', {}));
      await waitUntil(() => started.filter((op) => op === 'plug.mcp-faulty.hang').length === 2, 30_000);
      raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, reason: 'raw client gave up' } }));
      await waitUntil(() => ended.length === 3, 30_000);
      raw.send(rawCall(10, 'plug.mcp-faulty.echo', { message: 'after' }));
      expect(JSON.parse(textOf((await raw.answer(10)).result as CallToolResult))).toMatchObject({ message: 'after' });
      expect(raw.answered(9)).toBe(false);
    },
    TIMEOUT_MS,
  );

  it(
    'cancelling a call reaches nothing of an earlier call whose confirmation the client answered',
    async () => {
      // The fast path hands an ended call's AbortController to the next call unless something still follows its
      // signal: the SDK's request for the confirmation's elicitation leaves its abort listener there, and that
      // listener, aborted by a later call's cancellation, would tell the client to cancel the long-answered elicitation.
      const host = await openHost();
      const started: string[] = [];
      const ended: (string | undefined)[] = [];
      host.events.on('call:start', (c) => started.push(c.op_id));
      host.events.on('call:end', (c) => ended.push(c.code));
      const ends = await stdioGateway(host, { policy: { maxRisk: 'write' } });
      const lines: Record<string, unknown>[] = [];
      const send = (message: unknown): void => void ends.toGateway.write(`${JSON.stringify(message)}\n`);
      let pending = '';
      ends.fromGateway.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
          const line = JSON.parse(pending.slice(0, nl)) as Record<string, unknown>;
          pending = pending.slice(nl + 1);
          lines.push(line);
          if (line.method === 'elicitation/create') send({ jsonrpc: '2.0', id: line.id, result: { action: 'accept', content: { confirm: true } } });
        }
      });
      const answer = async (id: number): Promise<Record<string, unknown>> => {
        await waitUntil(() => lines.some((l) => l.id === id && l.method === undefined), 30_000);
        return lines.find((l) => l.id === id && l.method === undefined) ?? {};
      };
      send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'reuse', version: '1.0.0' } } });
      await answer(1);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });

      send(JSON.parse(rawCall(2, 'plug.host-callbacks.erase_notes', {})));
      const erased = (await answer(2)).result as CallToolResult;
      expect(erased.isError, JSON.stringify(erased)).not.toBe(true);
      const elicitation = lines.find((l) => l.method === 'elicitation/create');
      expect(elicitation?.id).toBeDefined();

      // Two plain calls in turn (each may take the controller of the one before), then one cancelled.
      for (const id of [3, 4]) {
        send(JSON.parse(rawCall(id, 'plug.mcp-faulty.echo', { message: `plain ${id}` })));
        expect(JSON.parse(textOf((await answer(id)).result as CallToolResult))).toMatchObject({ message: `plain ${id}` });
      }
      send(JSON.parse(rawCall(5, 'plug.mcp-faulty.hang', {})));
      await waitUntil(() => started.includes('plug.mcp-faulty.hang'), 30_000);
      send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'gave up' } });
      await waitUntil(() => ended.length === 4, 30_000);
      expect(ended[3]).toBe('PLUGIN_CANCELLED');
      // Answered after the cancellation: whatever it made the gateway write is in before this answer.
      send(JSON.parse(rawCall(6, 'plug.mcp-faulty.echo', { message: 'after' })));
      expect(JSON.parse(textOf((await answer(6)).result as CallToolResult))).toMatchObject({ message: 'after' });
      expect(lines.filter((l) => l.method === 'notifications/cancelled')).toEqual([]);
      expect(lines.some((l) => l.id === 5)).toBe(false);
    },
    TIMEOUT_MS,
  );

  it(
    'keeps the frame caps both ways and the nesting bound on answers',
    async () => {
      const ends = await stdioGateway(await openHost());
      const raw = rawClient(ends);
      // Over the cap a request line is refused alone, by its id; the next one is served.
      raw.send(rawCall(1, 'plug.mcp-faulty.echo', { message: 'x'.repeat(STDIO_DEFAULT_MAX_BUFFER_SIZE) }));
      expect(await raw.answer(1)).toMatchObject({ error: { code: -32600 } });
      raw.send(rawCall(2, 'plug.mcp-faulty.big', { bytes: 2 * 1024 * 1024 }));
      expect(((await raw.answer(2)).result as CallToolResult | undefined)?._meta?.[ERROR_META]).toMatchObject({ code: 'PLUGIN_RESULT_TOO_LARGE' });
      raw.send(rawCall(3, 'plug.host-deep.deep', { depth: pluginAnswerLimits.maxNestingDepth * 4 }));
      expect(((await raw.answer(3)).result as CallToolResult | undefined)?._meta?.[ERROR_META]).toMatchObject({ code: 'PLUGIN_MALFORMED_RESPONSE' });
    },
    TIMEOUT_MS,
  );

  it(
    'answers frames it cannot serve as the SDK server would: not JSON, bad params, a request for a task',
    async () => {
      const raw = rawClient(await stdioGateway(await openHost()));
      raw.send('{"jsonrpc":"2.0","id":1,');
      expect(await raw.answer(null)).toMatchObject({ error: { code: -32700 } });
      // Left to the SDK server, whose request schema refuses them with a JSON-RPC error.
      raw.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 7 } }));
      expect(await raw.answer(2)).toEqual({ jsonrpc: '2.0', id: 2, error: expect.objectContaining({ code: expect.any(Number) }) });
      raw.send(JSON.stringify({ jsonrpc: '2.0', id: 'three', method: 'tools/call', params: { name: 'plug.mcp-faulty.echo', arguments: [] } }));
      expect(await raw.answer('three')).toEqual({ jsonrpc: '2.0', id: 'three', error: expect.objectContaining({ code: expect.any(Number) }) });
      // The gateway offers no tasks: a task request goes the SDK way too, and is answered.
      raw.send(rawCall(5, 'plug.mcp-faulty.echo', { message: 'task' }, { task: { ttl: 1000 } }));
      expect(await raw.answer(5)).toHaveProperty('jsonrpc', '2.0');
      raw.send(rawCall(4, 'plug.mcp-faulty.echo', { message: 'plain' }));
      expect(JSON.parse(textOf((await raw.answer(4)).result as CallToolResult))).toMatchObject({ message: 'plain' });
    },
    TIMEOUT_MS,
  );

  it(
    'writes the audit record and the SERVER span of each call, naming the stdio client',
    async () => {
      const records: AuditRecord[] = [];
      const exporter = new InMemorySpanExporter();
      const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
      const host = await openHost({ audit: { sink: { write: (record) => void records.push(record) } } });
      const client = await sdkClient(await stdioGateway(host, { telemetry: { tracerProvider } }));
      await call(client, 'plug.mcp-faulty.echo', { message: 'audited' });
      expect(records.filter((r) => r.kind === 'call')).toEqual([expect.objectContaining({ op_id: 'plug.mcp-faulty.echo', outcome: 'ok', caller: { id: 'stdio', transport: 'stdio' } })]);
      const served = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
      expect(served.map((s) => [s.name, s.attributes['mcp_plugin_host.caller.id']])).toEqual([['tools/call plug.mcp-faulty.echo', 'stdio']]);
      await tracerProvider.shutdown();
    },
    TIMEOUT_MS,
  );
});
