/**
 * An ndjson-rpc answer nested deeper than a recursive walk can go (attack
 * review): JSON.parse reads it, but the host's result then held a value no
 * logger could print and the gateway could not send (its client got a bare
 * -32603). It is refused as PLUGIN_MALFORMED_RESPONSE, as an MCP answer is.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import { NdjsonRpcSession } from '../../../src/shapes/ndjson-rpc/NdjsonRpcSession.js';
import { trackLaunches, type LaunchTracker } from '../../support/launchTracker.js';
import { nodeArgv, plainLauncher } from '../../support/plainLauncher.js';

const ECHO_MJS = fileURLToPath(new URL('../../../fixtures/plugins/ndjson-echo/echo.mjs', import.meta.url));
const trackers: LaunchTracker[] = [];
const sessions: NdjsonRpcSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await Promise.all(trackers.splice(0).map((t) => t.stopAll()));
});

describe('an ndjson-rpc answer nested too deep', () => {
  it('fails its call with PLUGIN_MALFORMED_RESPONSE, whose details print', async () => {
    const tracker = trackLaunches(plainLauncher(nodeArgv(ECHO_MJS), { env: { ECHO_MODE: 'deep' } }));
    trackers.push(tracker);
    const session = NdjsonRpcSession.create({ launch: tracker.launch, callTimeoutMs: 15_000 })._unsafeUnwrap();
    sessions.push(session);
    const outcome = await session.callTool('echo', {});
    expect(outcome.isErr() ? outcome.error.code : 'accepted').toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(outcome.isErr() && String(outcome.error.details.reason)).toContain(`more than ${pluginAnswerLimits.maxNestingDepth} levels`);
    expect(() => JSON.stringify(outcome)).not.toThrow();
  });
});
