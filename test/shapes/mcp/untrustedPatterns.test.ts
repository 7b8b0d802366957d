/**
 * A plugin writes both an output schema's pattern and the string the host
 * matches against it: a backtracking pattern must not hold the host's thread
 * (every plugin and the gateway share it). Real plugin processes
 * (fixtures/pattern-server.mjs) answer through McpSession.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const server = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'pattern-server.mjs');

/** Thirty-two `a`s and a `!`: 2^32 backtracking steps for `(a+)+$`, far beyond any test's life on V8's engine. */
const EVIL_TEXT = `${'a'.repeat(32)}!`;

/** zod 4.0's email pattern (as its toJSONSchema emitted it): lookaheads, which RE2 cannot run. */
const ZOD_EMAIL = "^(?!\\.)(?!.*\\.\\.)([A-Za-z0-9_'+\\-\\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$";

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function patternServer(pattern: string): McpSession {
  const session = McpSession.create({ launch: launchCommand([process.execPath, server], { env: { PATTERN_SERVER_PATTERN: pattern } }) })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

async function say(session: McpSession, text: string) {
  return session.callTool('say', { text });
}

describe('patterns of plugin output schemas run bounded', () => {
  it('a backtracking pattern RE2 can run: the evil answer is the output-schema failure, a good answer passes', async () => {
    const session = patternServer('^(a+)+$');
    // On V8's engine this check would not end: the outcome arriving at all is the point.
    const evil = (await say(session, EVIL_TEXT))._unsafeUnwrapErr();
    expect(evil.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(evil.message).toMatch(/output schema: data\/text must match pattern/);
    expect((await say(session, 'aaaa'))._unsafeUnwrap().value.structuredContent).toEqual({ text: 'aaaa' });
  });

  it("a lookahead pattern (zod's email) still tells good from bad answers; a backtracking one with a lookahead is cut", async () => {
    const email = patternServer(ZOD_EMAIL);
    expect((await say(email, 'ada.lovelace@example.org'))._unsafeUnwrap().value.structuredContent).toEqual({ text: 'ada.lovelace@example.org' });
    for (const bad of ['.ada@example.org', 'ada..lovelace@example.org', 'ada@example', 'not an email']) {
      expect((await say(email, bad))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
    }
    const evil = patternServer('^(?=a)(a+)+$');
    const cut = (await say(evil, EVIL_TEXT))._unsafeUnwrapErr();
    expect(cut.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(cut.message).toMatch(/was cut after \d+ ms of backtracking/);
    // The matching thread was ended and a new one answers.
    expect((await say(evil, 'aaaa'))._unsafeUnwrap().value.structuredContent).toEqual({ text: 'aaaa' });
    expect((await say(email, 'grace@example.org')).isOk()).toBe(true);
  });
});
