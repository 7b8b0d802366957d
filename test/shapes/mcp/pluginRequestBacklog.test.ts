/**
 * A plugin that sends requests of its own (`ping`, any method) and does not
 * read its stdin: each answer the host owes it waits in the host's memory
 * until the plugin reads. Real plugin process (fixtures/deaf-requester.mjs)
 * through McpSession.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import clientRequestLimits from '../../../etc/client-requests.json' with { type: 'json' };
import type { McpToolResult } from '../../../src/shapes/mcp/McpConnection.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const server = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'deaf-requester.mjs');
const FLOOD = 50_000;
/**
 * What may still reach the plugin: the answers written before the pipe filled
 * (a socket pair's buffer holds a few thousand 40-byte answers), the
 * backlog the host keeps, and the requests of the one read in which the pipe
 * filled (64 KiB of 40-byte pings).
 */
const REACHABLE = 8_000 + clientRequestLimits.maxQueuedAnswersPerProcess + 1_700;

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

const textOf = (result: McpToolResult): string => (result.value.content[0] as { text: string }).text;

describe('a plugin that sends requests and does not read the answers', () => {
  it('gets at most a bounded backlog of answers, and its session still serves calls', async () => {
    const session = McpSession.create({ launch: launchCommand([process.execPath, server], { env: { DEAF_REQUESTER_FLOOD: String(FLOOD) } }) })._unsafeUnwrap();
    sessions.push(session);
    const flooded = await session.callTool('flood', {}, { timeoutMs: 60_000 });
    expect(textOf(flooded._unsafeUnwrap())).toBe(`sent ${FLOOD}`);
    // Queued behind every answer the host kept: by the time the plugin reads this call, it has read them all.
    const answered = Number(textOf((await session.callTool('answered', {}, { timeoutMs: 60_000 }))._unsafeUnwrap()));
    expect(answered).toBeGreaterThan(0);
    // Before the bound, the host answered all 50,000, holding every answer (and its request's state) in memory meanwhile.
    expect(answered).toBeLessThanOrEqual(REACHABLE);
  }, 120_000);

  it('with large request ids, the answers kept are bounded in bytes, not only in number', async () => {
    const idBytes = 100_000;
    const flood = 2_000;
    const session = McpSession.create({
      launch: launchCommand([process.execPath, server], { env: { DEAF_REQUESTER_FLOOD: String(flood), DEAF_REQUESTER_ID_BYTES: String(idBytes) } }),
    })._unsafeUnwrap();
    sessions.push(session);
    expect(textOf((await session.callTool('flood', {}, { timeoutMs: 60_000 }))._unsafeUnwrap())).toBe(`sent ${flood}`);
    const answered = Number(textOf((await session.callTool('answered', {}, { timeoutMs: 60_000 }))._unsafeUnwrap()));
    expect(answered).toBeGreaterThan(0);
    // Every answer repeats its 100 KB id: counted alone, 256 of them (25 MB) waited for a plugin that read none.
    const keptBytes = clientRequestLimits.maxQueuedAnswerBytesPerProcess + 3 * idBytes;
    expect(answered * idBytes).toBeLessThanOrEqual(keptBytes + 1024 * 1024);
  }, 120_000);
});
