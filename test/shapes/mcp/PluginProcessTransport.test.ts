import { PassThrough, Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ErrorCode, LATEST_PROTOCOL_VERSION, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { HostError } from '../../../src/errors/HostError.js';
import type { Clock } from '../../../src/ports/ports.js';
import type { ExitInfo, PluginProcess } from '../../../src/process/PluginProcess.js';
import { PluginProcessTransport } from '../../../src/shapes/mcp/PluginProcessTransport.js';

const EXIT: ExitInfo = { code: 0, signal: null, status: 0, description: 'exited with code 0' };

function fakeProcess(stdin: Writable = new PassThrough()) {
  const stdout = new PassThrough();
  let exit!: (info: ExitInfo) => void;
  const exited = new Promise<ExitInfo>((resolve) => (exit = resolve));
  const stop = vi.fn(() => {
    stdout.end();
    exit(EXIT);
    return exited;
  });
  const process: PluginProcess = {
    pid: 4242,
    stdin,
    stdout,
    exited,
    exitInfo: undefined,
    stderrTail: () => '',
    onStderrLine: () => () => undefined,
    stop,
  };
  return { process, stdout, stop, exit };
}

async function started(options: ConstructorParameters<typeof PluginProcessTransport>[1] = {}, stdin?: Writable) {
  const fake = fakeProcess(stdin);
  const transport = new PluginProcessTransport(fake.process, options);
  const messages: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  const closes = vi.fn();
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = (e) => errors.push(e);
  transport.onclose = closes;
  await transport.start();
  return { ...fake, transport, messages, errors, closes };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('PluginProcessTransport', () => {
  it('writes each message as one JSON line on stdin', async () => {
    const stdin = new PassThrough();
    const { transport } = await started({}, stdin);
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    // The second line of a turn goes out with the turn's end (LineChannel gathers them into one write).
    await new Promise((resolve) => setImmediate(resolve));
    expect(stdin.read()?.toString()).toBe('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  });

  it('waits for the pipe to drain before resolving a send that filled it', async () => {
    const written: string[] = [];
    let finishWrite: (() => void) | undefined;
    const slowPipe = new Writable({
      highWaterMark: 8,
      write(chunk: Buffer, _enc, callback) {
        written.push(chunk.toString());
        finishWrite = callback;
      },
    });
    const { transport } = await started({}, slowPipe);
    let sent = false;
    const sending = transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' }).then(() => (sent = true));
    await tick();
    expect(written).toHaveLength(1);
    expect(sent).toBe(false);
    finishWrite?.();
    await sending;
    expect(sent).toBe(true);
  });

  it('delivers JSON-RPC lines, ignores blank lines and strips CRLF', async () => {
    const { stdout, messages, errors } = await started();
    stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\r\n\n   \n{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n');
    await tick();
    expect(messages).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
    ]);
    expect(errors).toEqual([]);
  });

  it('reports non-JSON and non-JSON-RPC lines as violations, fails the one request an oversize answer was for, and keeps reading', async () => {
    const violations: HostError[] = [];
    const output: boolean[] = [];
    const oversize: HostError[] = [];
    const { stdout, messages, errors } = await started({
      maxFrameBytes: 64,
      onViolation: (v, isOutput) => void (violations.push(v), output.push(isOutput)),
      onOversizeAnswer: (f) => oversize.push(f),
    });
    const big = `{"jsonrpc":"2.0","id":1,"result":{"pad":"${'x'.repeat(100)}"}}`;
    stdout.write(`hello world\n{"not":"rpc"}\n{"jsonrpc":"2.0","id":9}\n${big}\n{"jsonrpc":"2.0","id":2,"result":{}}\n`);
    await tick();
    expect(violations.map((v) => v.code)).toEqual(['PLUGIN_INVALID_JSON', 'PLUGIN_MALFORMED_RESPONSE', 'PLUGIN_MALFORMED_RESPONSE']);
    // A banner and a JSON log line are plugin output; a message that claims JSON-RPC and breaks it is not.
    expect(output).toEqual([true, true, false]);
    expect(violations[0]?.details.line_excerpt).toBe('hello world');
    expect(errors).toHaveLength(3);
    expect(oversize.map((f) => f.code)).toEqual(['PLUGIN_RESULT_TOO_LARGE']);
    expect(oversize[0]?.details).toEqual({ bytes: big.length, max_frame_bytes: 64 });
    expect(messages).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: ErrorCode.InternalError, message: oversize[0]?.message, data: oversize[0] } },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
  });

  it('finds the id of an oversize answer at the end of its line once the newline arrives; a line without one is a violation', async () => {
    const violations: HostError[] = [];
    const oversize: HostError[] = [];
    const { stdout, messages } = await started({ maxFrameBytes: 64, onViolation: (v) => violations.push(v), onOversizeAnswer: (f) => oversize.push(f) });
    // The TypeScript SDK writes the id after the result; an "id" nested in the result is not the answer's.
    stdout.write('{"result":{"content":[{"type":"text","id":99,"text":"');
    stdout.write('x'.repeat(100));
    await tick();
    expect([violations, oversize, messages]).toEqual([[], [], []]);
    stdout.write(`${'x'.repeat(800)}"}]},"jsonrpc":"2.0","id":5}\n`);
    await tick();
    expect(messages.map((m) => ('id' in m ? m.id : undefined))).toEqual([5]);
    expect(oversize).toHaveLength(1);
    const notification = `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${'y'.repeat(200)}"}}`;
    stdout.write(`${notification}\n{"jsonrpc":"2.0","id":2,"result":{}}\n`);
    await tick();
    expect(violations.map((v) => v.code)).toEqual(['PLUGIN_FRAME_TOO_LARGE']);
    expect(violations[0]?.details).toEqual({ bytes_seen: notification.length, max_frame_bytes: 64 });
    expect(messages.at(-1)).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
  });

  it('reports a line that runs on to 16 times the cap without a newline as PLUGIN_FRAME_TOO_LARGE, without waiting for its end', async () => {
    const violations: HostError[] = [];
    const { stdout } = await started({ maxFrameBytes: 64, onViolation: (v) => violations.push(v) });
    stdout.write(`{"jsonrpc":"2.0","id":1,"result":{"pad":"${'x'.repeat(64 * 16 - 100)}`);
    await tick();
    expect(violations).toEqual([]);
    stdout.write('x'.repeat(200));
    await tick();
    expect(violations.map((v) => v.code)).toEqual(['PLUGIN_FRAME_TOO_LARGE']);
    expect(violations[0]?.details.bytes_seen as number).toBeGreaterThan(64 * 16);
  });

  it('cuts long offending lines down to an excerpt', async () => {
    const violations: HostError[] = [];
    const { stdout } = await started({ onViolation: (v) => violations.push(v) });
    stdout.write(`${'y'.repeat(5000)}\n`);
    await tick();
    expect((violations[0]?.details.line_excerpt as string).length).toBeLessThanOrEqual(201);
  });

  it('closes once when stdout ends, keeping a final unterminated line as the partial line, not a message', async () => {
    const { stdout, messages, closes, transport } = await started();
    stdout.end('{"jsonrpc":"2.0","id":7,"result":{}}');
    await tick();
    expect(messages).toEqual([]);
    expect(transport.partialLine).toBe('{"jsonrpc":"2.0","id":7,"result":{}}');
    expect(closes).toHaveBeenCalledTimes(1);
    expect(transport.isClosed).toBe(true);
    expect(transport.closedByPeer).toBe(true);
    await expect(transport.send({ jsonrpc: '2.0', id: 8, method: 'ping' })).rejects.toMatchObject({ code: ErrorCode.ConnectionClosed });
    await expect(transport.send({ jsonrpc: '2.0', id: 8, method: 'ping' })).rejects.toBeInstanceOf(McpError);
  });

  it('closes when the process exits even if stdout stays open', async () => {
    const { exit, closes } = await started();
    exit(EXIT);
    await vi.waitFor(() => expect(closes).toHaveBeenCalledTimes(1));
  });

  it('waits for stdout after the exit on the clock it is given, not on a timer of its own', async () => {
    const timers: { ms: number; fire: () => void }[] = [];
    const clock: Clock = { now: () => 0, setTimer: (fire, ms) => (timers.push({ ms, fire }), () => undefined) };
    const { exit, closes, transport } = await started({ clock });
    exit(EXIT);
    await vi.waitFor(() => expect(timers.map((t) => t.ms)).toEqual([200]));
    expect(closes).not.toHaveBeenCalled();
    timers[0]?.fire();
    expect(closes).toHaveBeenCalledTimes(1);
    expect(transport.closedByPeer).toBe(true);
  });

  it('stops the process on close and fires onclose once', async () => {
    const { transport, stop, closes } = await started();
    await transport.close();
    await transport.close();
    expect(stop).toHaveBeenCalled();
    expect(closes).toHaveBeenCalledTimes(1);
    expect(transport.closedByPeer).toBe(false);
  });

  it('refuses to start twice', async () => {
    const { transport } = await started();
    await expect(transport.start()).rejects.toThrow(/already started/);
  });

  it('remembers the protocol version the plugin offered in its initialize answer', async () => {
    const { transport, stdout } = await started();
    await transport.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    stdout.write('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}\n');
    await tick();
    expect(transport.offeredProtocolVersion).toBe('1999-01-01');
    transport.setProtocolVersion('2025-06-18');
    expect(transport.protocolVersion).toBe('2025-06-18');
  });
});

describe('PluginProcessTransport, a line nested deeper than the answer bound', () => {
  const LIMIT = pluginAnswerLimits.maxNestingDepth;
  const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
  // Read by code and kind only: a recursive walk of a message that got through deep would overflow the stack.
  const outcome = (m: JSONRPCMessage): string =>
    'error' in m ? String((m.error.data as HostError | undefined)?.code ?? m.error.code) : 'result' in m ? `result ${String(m.id)}` : `${m.method}`;

  it('fails only the request it answers, as PLUGIN_MALFORMED_RESPONSE with the bound, and keeps reading', async () => {
    const { stdout, messages, errors } = await started();
    // A result value may nest LIMIT levels (the result object and LIMIT - 1 arrays); one more is refused.
    stdout.write(`{"jsonrpc":"2.0","id":1,"result":{"deep":${nested(LIMIT - 1)}}}\n`);
    stdout.write(`{"jsonrpc":"2.0","id":2,"result":{"deep":${nested(LIMIT)}}}\n`);
    stdout.write(`{"jsonrpc":"2.0","id":3,"error":{"code":-32050,"message":"deep","data":${nested(100_000)}}}\n`);
    stdout.write('{"jsonrpc":"2.0","id":4,"result":{}}\n');
    await tick();
    expect(messages.map(outcome)).toEqual(['result 1', 'PLUGIN_MALFORMED_RESPONSE', 'PLUGIN_MALFORMED_RESPONSE', 'result 4']);
    const refused = messages[1] as { error: { data: HostError } };
    expect(refused.error.data.details).toEqual({ max_nesting_depth: LIMIT });
    expect(messages.map((m) => ('id' in m ? m.id : undefined))).toEqual([1, 2, 3, 4]);
    expect(errors).toEqual([]);
  });

  it('hands on a log message with a marker in place of its data, which any listener can print', async () => {
    const { stdout, messages } = await started();
    stdout.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"deep","data":${nested(100_000)}}}\n`);
    await tick();
    expect(messages.map(outcome)).toEqual(['notifications/message']);
    expect(messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'error', logger: 'deep', data: `[log data nested deeper than ${LIMIT} levels, dropped]` },
    });
  });

  it("refuses the plugin's own request in an error answer and drops any other message, reporting each as an error", async () => {
    const stdin = new PassThrough();
    const violations: HostError[] = [];
    const output: boolean[] = [];
    const { stdout, messages, errors } = await started({ onViolation: (v, isOutput) => void (violations.push(v), output.push(isOutput)) }, stdin);
    stdout.write(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"deep":${nested(100_000)}}}\n`);
    stdout.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"deep":${nested(100_000)}}}\n`);
    // JSON that is no message at all is plugin output, as a line of any depth without `jsonrpc` is.
    stdout.write(`{"id":7,"deep":${nested(100_000)}}\n`);
    stdout.write('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n');
    await tick();
    expect(messages.map(outcome)).toEqual(['notifications/tools/list_changed']);
    expect(errors.map((e) => (e as HostError).code)).toEqual(['PLUGIN_MALFORMED_RESPONSE', 'PLUGIN_MALFORMED_RESPONSE', 'PLUGIN_MALFORMED_RESPONSE']);
    expect(violations.map((v) => v.code)).toEqual(['PLUGIN_MALFORMED_RESPONSE']);
    expect(output).toEqual([true]);
    expect((violations[0]?.details.line_excerpt as string).length).toBeLessThanOrEqual(201);
    const answer = JSON.parse(String(stdin.read())) as { id: unknown; error: { code: number; message: string } };
    expect(answer).toEqual({ jsonrpc: '2.0', id: 's1', error: { code: ErrorCode.InvalidRequest, message: `request nested more than ${LIMIT} levels deep` } });
  });
});

describe("PluginProcessTransport, a plugin's request id 0", () => {
  // The SDK drops a cancel whose requestId is falsy: the plugin's 0 reaches it as this id, and this id as 0.
  const STAND_IN = 'mcp-plugin-host:plugin-request-0';
  const sampling = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } });
  const cancel = (requestId: unknown) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'gave up' } });
  const lines = (stdin: PassThrough) => String(stdin.read()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

  it('swaps 0 and its stand-in in the plugin\'s requests, its cancels and the answers to them; the host\'s own ids pass as they are', async () => {
    const stdin = new PassThrough();
    const { stdout, messages, transport } = await started({}, stdin);
    stdout.write(`${sampling(0)}\n${sampling(STAND_IN)}\n${sampling(1)}\n${cancel(0)}\n${cancel(STAND_IN)}\n`);
    // An answer to the host's own request 0 (its initialize) is in the host's numbering.
    stdout.write('{"jsonrpc":"2.0","id":0,"result":{}}\n');
    await tick();
    expect(messages.map((m) => ('id' in m ? m.id : ((m as unknown as { params: { requestId: unknown } }).params.requestId)))).toEqual([STAND_IN, 0, 1, STAND_IN, 0, 0]);
    await transport.send({ jsonrpc: '2.0', id: STAND_IN, result: { answered: 'first' } });
    await transport.send({ jsonrpc: '2.0', id: 0, error: { code: -32601, message: 'no' } });
    await transport.send({ jsonrpc: '2.0', id: 1, result: {} });
    // The host's own request 0 and its cancel are in the host's numbering.
    await transport.send({ jsonrpc: '2.0', id: 0, method: 'ping' });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 0 } });
    await tick();
    expect(lines(stdin).map((m) => [m.id ?? (m.params as { requestId: unknown }).requestId, m.method ?? Object.keys(m).find((k) => k === 'result' || k === 'error')])).toEqual([
      [0, 'result'],
      [STAND_IN, 'error'],
      [1, 'result'],
      [0, 'ping'],
      [0, 'notifications/cancelled'],
    ]);
  });

  it("lets the host's SDK Client abort its handler for the plugin's request 0 when the plugin cancels it, and answers the colliding id under its own id", async () => {
    const stdin = new PassThrough();
    const { process, stdout } = fakeProcess(stdin);
    // Client.connect starts the transport itself.
    const transport = new PluginProcessTransport(process);
    const client = new Client({ name: 'host', version: '1.0.0' }, { capabilities: { sampling: {} } });
    const signals = new Map<unknown, AbortSignal>();
    let answerHeld = (): void => undefined;
    const held = new Promise<void>((resolve) => (answerHeld = resolve));
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const asked = (request.params.messages[0]?.content as { text?: string } | undefined)?.text;
      signals.set(asked, extra.signal);
      await held;
      return { role: 'assistant', content: { type: 'text', text: `for ${asked}` }, model: 'm' };
    });
    const connecting = client.connect(transport);
    await tick();
    const initialize = lines(stdin)[0];
    stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: initialize?.id, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, serverInfo: { name: 'plugin', version: '1.0.0' } } })}\n`);
    await connecting;
    await tick();
    stdin.read();
    const ask = (id: unknown, text: string) =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens: 1 } });
    stdout.write(`${ask(0, 'zero')}\n${ask(STAND_IN, 'colliding')}\n`);
    await vi.waitFor(() => expect(signals.size).toBe(2));
    stdout.write(`${cancel(0)}\n`);
    await vi.waitFor(() => expect(signals.get('zero')?.aborted).toBe(true));
    expect(signals.get('zero')?.reason).toBe('gave up');
    expect(signals.get('colliding')?.aborted).toBe(false);
    answerHeld();
    await vi.waitFor(() => expect(stdin.readableLength).toBeGreaterThan(0));
    await tick();
    // Only the request still wanted is answered, under the plugin's own id.
    expect(lines(stdin)).toEqual([{ jsonrpc: '2.0', id: STAND_IN, result: { role: 'assistant', content: { type: 'text', text: 'for colliding' }, model: 'm' } }]);
    await client.close();
  });
});
