import { afterEach, describe, expect, it, vi } from 'vitest';
import { NdjsonRpcSession } from '../../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { trackLaunches, type LaunchTracker } from '../../support/launchTracker.js';
import { plainLauncher } from '../../support/plainLauncher.js';
import { watchChannels } from '../../support/watchChannels.js';

/** A plugin that never reads its stdin, so the pipe fills and stays full. */
const DEAF = [process.execPath, '-e', 'setInterval(() => {}, 1000)'];
const PARAM_BYTES = 64 * 1024;

const trackers: LaunchTracker[] = [];

afterEach(async () => {
  await Promise.all(trackers.splice(0).map((t) => t.stopAll()));
  vi.restoreAllMocks();
});

describe('NdjsonRpcSession: a plugin that stops reading its stdin', () => {
  it('keeps the host-side buffer to about one request however many calls time out', async () => {
    const channels = watchChannels();
    const tracker = trackLaunches(plainLauncher(DEAF));
    trackers.push(tracker);
    const session = NdjsonRpcSession.create({ launch: tracker.launch, callTimeoutMs: 200 })._unsafeUnwrap();
    const params = { text: 'p'.repeat(PARAM_BYTES) };
    for (let i = 0; i < 30; i++) {
      const outcome = await session.callTool('echo', params, { timeoutMs: 20 });
      expect(outcome._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
    }
    const stdin = tracker.processes[0]!.stdin;
    // Writing past a full pipe (as before) left every timed-out request in Node's buffer: 28 lines, about 1.8 MB.
    const bound = PARAM_BYTES + 64 + stdin.writableHighWaterMark;
    expect(stdin.writableLength).toBeLessThanOrEqual(bound);
    // The channel's count covers the pipe's buffer and the lines waiting for it.
    expect(channels.size).toBe(1);
    for (const channel of channels) expect(channel.queuedBytes).toBeLessThanOrEqual(bound);
    await session.close();
  });
});
