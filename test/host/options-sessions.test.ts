/**
 * The ndjson-rpc and handshake sessions take the host's total cap as an
 * option, as the MCP session does, so it bounds what no call budgets: a
 * handshake launch that only lists the tools, an ndjson call without a cap.
 */
import { describe, expect, it } from 'vitest';
import { HandshakeSession } from '../../src/shapes/handshake/HandshakeSession.js';
import { NdjsonRpcSession } from '../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { plainLauncher } from '../support/plainLauncher.js';

/** A plugin that reads its stdin and never writes a line. */
const silentPlugin = plainLauncher([process.execPath, '-e', 'process.stdin.resume()']);

describe('a session built with maxTotalTimeoutMs', () => {
  it('caps a handshake launch that no call budgets (listing the tools)', async () => {
    const session = HandshakeSession.create({ launch: silentPlugin, timeouts: { handshakeMs: 120_000 }, maxTotalTimeoutMs: 300 })._unsafeUnwrap();
    try {
      expect((await session.listTools())._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'total', timeout_ms: 300 } });
    } finally {
      await session.close();
    }
  }, 20_000);

  it('caps an ndjson-rpc call that sets no cap of its own', async () => {
    const session = NdjsonRpcSession.create({ launch: silentPlugin, callTimeoutMs: 120_000, maxTotalTimeoutMs: 300 })._unsafeUnwrap();
    try {
      expect((await session.callTool('echo', {}))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { timeout_ms: 300 } });
    } finally {
      await session.close();
    }
  }, 20_000);
});
