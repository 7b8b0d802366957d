import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { FAULTY_TOOLS, launchFaulty } from '../../support/mcpFixtures.js';
import { stopAllTestProcesses } from '../../support/mcpLaunch.js';
import { watchChannels } from '../../support/watchChannels.js';

const MESSAGE_BYTES = 64 * 1024;
const sessions: McpSession[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
  vi.restoreAllMocks();
});

describe('McpSession: a plugin that stops reading its stdin', () => {
  it('keeps the host-side buffer to about one request however many calls time out', async () => {
    const channels = watchChannels();
    const processes: PluginProcess[] = [];
    const session = McpSession.create({ launch: launchFaulty('deaf-on-hang', { onSpawn: (p) => processes.push(p) }), expectedTools: FAULTY_TOOLS })._unsafeUnwrap();
    sessions.push(session);
    // Started first: a call's timeout also counts while the plugin starts, and these are short.
    expect((await session.listTools()).isOk()).toBe(true);
    // mcp-faulty stops reading stdin once it runs `hang`.
    expect((await session.callTool('hang', {}, { timeoutMs: 200 }))._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
    const message = 'm'.repeat(MESSAGE_BYTES);
    for (let i = 0; i < 30; i++) {
      expect((await session.callTool('echo', { message }, { timeoutMs: 30 }))._unsafeUnwrapErr().code).toBe('PLUGIN_TIMEOUT');
    }
    const stdin = processes[0]!.stdin;
    expect(processes).toHaveLength(1);
    // Writing past a full pipe (as before) left every timed-out request and its cancellation in Node's buffer: about 1.7 MB.
    const bound = MESSAGE_BYTES + 1024 + stdin.writableHighWaterMark;
    expect(stdin.writableLength).toBeLessThanOrEqual(bound);
    // The channel's count covers the pipe's buffer and the lines waiting for it.
    expect(channels.size).toBe(1);
    for (const channel of channels) expect(channel.queuedBytes).toBeLessThanOrEqual(bound);
  });
});
