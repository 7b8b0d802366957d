import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import { LineChannel, type LineChannelEnd } from '../../src/framing/LineChannel.js';
import { systemClock, type Clock } from '../../src/ports/ports.js';
import type { ExitInfo, PluginProcess } from '../../src/process/PluginProcess.js';
import { spawnPlain } from '../support/plainLauncher.js';

const LINE_BYTES = 64 * 1024;

/** Reads stdin slowly (one 16 KiB read every 5 ms) and prints the number of lines received so far after each read. */
const SLOW_READER = `
process.stdin.pause();
let lines = 0;
setInterval(() => {
  const chunk = process.stdin.read(16384) ?? process.stdin.read();
  if (chunk === null) return;
  for (const byte of chunk) if (byte === 10) lines++;
  process.stdout.write(lines + '\\n');
}, 5);
`;
/** Never reads stdin. */
const DEAF = 'setInterval(() => {}, 1000)';
/** Writes 100 bytes of one line, no newline, and stays alive. */
const UNENDING_LINE = "process.stdout.write('x'.repeat(100)); setInterval(() => {}, 1000)";

const running: PluginProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 1000 })));
});

async function spawnNode(source: string): Promise<PluginProcess> {
  const spawned = await spawnPlain([process.execPath, '-e', source]);
  const child = spawned._unsafeUnwrap();
  running.push(child);
  return child;
}

function open(process: PluginProcess, maxFrameBytes?: number) {
  const lines: string[] = [];
  const oversize: HostError[] = [];
  const ends: LineChannelEnd[] = [];
  const channel = new LineChannel(
    process,
    { onLine: (line) => lines.push(line), onOversize: (v) => oversize.push(v), onEnd: (end) => ends.push(end) },
    { clock: systemClock, ...(maxFrameBytes === undefined ? {} : { maxFrameBytes }) },
  );
  return { channel, lines, oversize, ends };
}

/** A clock whose timers fire only when the test says so. */
function manualClock() {
  const timers: { ms: number; fire: () => void; cancelled: boolean }[] = [];
  const clock: Clock = {
    now: () => 0,
    setTimer: (fn, ms) => {
      const timer = { ms, fire: fn, cancelled: false };
      timers.push(timer);
      return () => (timer.cancelled = true);
    },
  };
  return { clock, timers };
}

function fakeProcess() {
  let exit!: (info: ExitInfo) => void;
  const exited = new Promise<ExitInfo>((resolve) => (exit = resolve));
  const process: PluginProcess = {
    pid: 4242,
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    exited,
    exitInfo: undefined,
    stderrTail: () => '',
    onStderrLine: () => () => undefined,
    stop: () => exited,
  };
  return { process, exit };
}

describe('LineChannel: backpressure', () => {
  it('holds at most the pipe buffer and one line for a slow reader, and delivers every line in the end', async () => {
    const child = await spawnNode(SLOW_READER);
    const { channel, lines } = open(child);
    const line = 'y'.repeat(LINE_BYTES - 1);
    let mostQueued = 0;
    for (let i = 0; i < 40; i++) {
      const sent = channel.send(line);
      mostQueued = Math.max(mostQueued, channel.queuedBytes);
      expect(await sent).toBe(true);
    }
    // Node's pipe buffer takes one line past its 16 KiB mark; the channel adds nothing while a caller awaits its send.
    expect(mostQueued).toBeLessThanOrEqual(LINE_BYTES + child.stdin.writableHighWaterMark);
    await vi.waitFor(() => expect(lines.at(-1)).toBe('40'), { timeout: 20_000 });
  });

  it('queues lines behind a full pipe instead of writing them, and drops the lines of callers who gave up', async () => {
    const child = await spawnNode(DEAF);
    const { channel } = open(child);
    const line = 'z'.repeat(LINE_BYTES - 1);
    const filling: Promise<boolean>[] = [];
    while (!channel.isBackedUp) filling.push(channel.send(line));
    const pipeBuffer = LINE_BYTES + child.stdin.writableHighWaterMark;
    const abandoned = Array.from({ length: 100 }, () => {
      const gaveUp = new AbortController();
      const sent = channel.send(line, gaveUp.signal);
      gaveUp.abort();
      return sent;
    });
    expect(await Promise.all(abandoned)).toEqual(Array.from({ length: 100 }, () => false));
    expect(channel.queuedBytes).toBeLessThanOrEqual(pipeBuffer);
    const waiting = channel.send(line);
    expect(channel.queuedBytes).toBeLessThanOrEqual(pipeBuffer + LINE_BYTES);
    channel.close();
    expect(await waiting).toBe(false);
    expect(await filling.at(-1)).toBe(false);
    expect(channel.queuedBytes).toBeLessThanOrEqual(pipeBuffer);
  });
});

/** Writes back every line it reads. */
const ECHO = "process.stdin.pipe(process.stdout)";

describe('LineChannel: one write per turn', () => {
  it('sends the first line of a turn at once and the lines sent after it in the same turn in one write', async () => {
    const child = await spawnNode(ECHO);
    const { channel, lines } = open(child);
    // The pipe's writes as the stream hands them to the operating system: one line each, or several in one writev.
    const stdin = child.stdin as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const writes: number[] = [];
    const write = stdin._write.bind(stdin);
    const writev = stdin._writev.bind(stdin);
    stdin._write = (...a) => (writes.push(1), write(...a));
    stdin._writev = (...a) => (writes.push((a[0] as unknown[]).length), writev(...a));
    const sent = ['a', 'b', 'c', 'd', 'e'].map((line) => channel.send(line));
    expect(writes).toEqual([1]);
    expect(await Promise.all(sent)).toEqual([true, true, true, true, true]);
    await vi.waitFor(() => expect(lines).toEqual(['a', 'b', 'c', 'd', 'e']), { timeout: 10_000 });
    expect(writes).toEqual([1, 4]);
    channel.send('f');
    await vi.waitFor(() => expect(lines.at(-1)).toBe('f'), { timeout: 10_000 });
    expect(writes).toEqual([1, 4, 1]);
  });
});

describe('LineChannel: frame cap', () => {
  it('reports PLUGIN_FRAME_TOO_LARGE as soon as a line of a live plugin crosses the cap, before any newline', async () => {
    const child = await spawnNode(UNENDING_LINE);
    const { oversize, lines, ends } = open(child, 64);
    await vi.waitFor(() => expect(oversize).toHaveLength(1), { timeout: 10_000 });
    expect(oversize[0]?.code).toBe('PLUGIN_FRAME_TOO_LARGE');
    expect(oversize[0]?.details).toEqual({ bytes_seen: 100, max_frame_bytes: 64 });
    expect(oversize[0]?.message).toBe('plugin wrote a line longer than the 64-byte frame cap (100 bytes seen)');
    expect(lines).toEqual([]);
    expect(ends).toEqual([]);
  });
});

describe('LineChannel: ending', () => {
  it('waits for stdout after the exit on the given clock, and ends once', async () => {
    const { clock, timers } = manualClock();
    const { process, exit } = fakeProcess();
    const ends: LineChannelEnd[] = [];
    const channel = new LineChannel(process, { onLine: () => undefined, onOversize: () => undefined, onEnd: (end) => ends.push(end) }, { clock, stdoutGraceAfterExitMs: 321 });
    exit({ code: 0, signal: null, status: 0, description: 'exited with code 0' });
    await vi.waitFor(() => expect(timers.map((t) => t.ms)).toEqual([321]));
    expect(ends).toEqual([]);
    expect(channel.isEnded).toBe(false);
    timers[0]?.fire();
    expect(ends).toEqual([{ byPeer: true, partial: undefined }]);
    (process.stdout as PassThrough).end('cut');
    channel.close();
    expect(ends).toHaveLength(1);
    expect(await channel.send('late')).toBe(false);
  });

  it('ends by the end of stdout with the unfinished line, and cancels the exit timer', async () => {
    const { clock, timers } = manualClock();
    const { process, exit } = fakeProcess();
    const ends: LineChannelEnd[] = [];
    new LineChannel(process, { onLine: () => undefined, onOversize: () => undefined, onEnd: (end) => ends.push(end) }, { clock, stdoutGraceAfterExitMs: 50 });
    exit({ code: 1, signal: null, status: 1, description: 'exited with code 1' });
    await vi.waitFor(() => expect(timers).toHaveLength(1));
    (process.stdout as PassThrough).end('{"partial":');
    await vi.waitFor(() => expect(ends).toEqual([{ byPeer: true, partial: '{"partial":' }]));
    expect(timers[0]?.cancelled).toBe(true);
  });
});
