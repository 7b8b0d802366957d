import { errAsync } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { hostError } from '../../src/errors/HostError.js';
import { HandshakeSession } from '../../src/shapes/handshake/HandshakeSession.js';
import { McpSession } from '../../src/shapes/mcp/McpSession.js';
import { NdjsonRpcSession } from '../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

const neverLaunched: ProcessLauncher = () => errAsync(hostError('PLUGIN_SPAWN_FAILED', 'this test launches nothing'));

describe('a closed session, whatever its protocol', () => {
  it('refuses calls with HOST_CLOSED and one text, naming its shape in the details', async () => {
    const sessions = [
      McpSession.create({ launch: neverLaunched })._unsafeUnwrap(),
      NdjsonRpcSession.create({ launch: neverLaunched })._unsafeUnwrap(),
      HandshakeSession.create({ launch: neverLaunched })._unsafeUnwrap(),
    ];
    for (const session of sessions) {
      await session.close();
      const refused = (await session.callTool('echo', {}))._unsafeUnwrapErr();
      expect({ code: refused.code, message: refused.message, shape: refused.details.shape }).toEqual({
        code: 'HOST_CLOSED',
        message: 'the plugin session is closed',
        shape: session.shape,
      });
    }
  });
});
