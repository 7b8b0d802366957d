/**
 * The handshake channel holds a bounded number of lines nobody asked for: a
 * one-shot plugin that floods stdout (while the host stops it, SIGTERM
 * ignored, for up to the teardown timeout) must not fill the host's memory
 * with them (review R11 F5). A real child process writes the lines.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { systemClock } from '../../../src/ports/ports.js';
import { PullChannel, type ChannelEvent } from '../../../src/shapes/handshake/PullChannel.js';
import { spawnPlain } from '../../support/plainLauncher.js';

const LINES = 20_000;
const started: PluginProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0 })));
});

describe('PullChannel', () => {
  it('keeps the first two lines nobody asked for, then the end, and drops the rest of a flood', async () => {
    const flood = `process.stdout.write(${JSON.stringify('{"type":"x"}\n')}.repeat(${LINES}))`;
    const child = (await spawnPlain([process.execPath, '-e', flood]))._unsafeUnwrap();
    started.push(child);
    const channel = new PullChannel(child, 1 << 20, systemClock);
    // Nothing is asked until the plugin's stdout has ended: every line arrived unasked.
    if (!child.stdout.readableEnded) await once(child.stdout, 'end');
    const events: ChannelEvent['kind'][] = [];
    for (let event = await channel.next(30_000, new Promise(() => undefined)); ; event = await channel.next(30_000, new Promise(() => undefined))) {
      events.push(event.kind);
      if (event.kind !== 'line') break;
    }
    channel.dispose();
    // The old channel queued all 20,000 lines before the end.
    expect(events).toEqual(['line', 'line', 'end']);
  });
});
