/**
 * The bytes one `tools/list` or `resources/list` (likewise templates and
 * prompts) may take across its pages: the host lists a plugin's tools by
 * itself after every `tools/list_changed` the plugin sends, a plugin's
 * `resources/list_changed` invites every gateway client to list again, and
 * each list holds every page until the last. Real plugin process (mcp-raw
 * --heavy-tools / --heavy-resources: 60 pages of about 1 MB) through McpSession.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const RAW = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'plugins', 'mcp-raw', 'bin', 'mcp-raw.mjs');
const PAGE_BYTES = 1_000_000;

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

const LISTS = [
  { phase: 'tools/list', flag: '--heavy-tools', list: (session: McpSession) => session.listTools() },
  { phase: 'resources/list', flag: '--heavy-resources', list: (session: McpSession) => session.listResources() },
] as const;

describe.each(LISTS)('a $phase whose pages together are larger than etc/plugin-answers.json allows', ({ phase, flag, list }) => {
  it('ends as PLUGIN_MALFORMED_RESPONSE once the bound is passed, without asking for the remaining pages', async () => {
    const processes: PluginProcess[] = [];
    const session = McpSession.create({
      launch: launchCommand([process.execPath, RAW, flag], { onSpawn: (p) => processes.push(p) }),
      expectedTools: ['shaped', 'raw'],
    })._unsafeUnwrap();
    sessions.push(session);
    // Before the bound the host read all 60 pages (60 MB of one list held at once) and answered them.
    const listed = (await list(session))._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase, max_list_bytes: pluginAnswerLimits.maxListBytes });
    const asked = (processes.at(-1)?.stderrTail() ?? '').split('\n').filter((line) => line.startsWith(`received ${phase} `)).length;
    expect(asked).toBe(Math.floor(pluginAnswerLimits.maxListBytes / PAGE_BYTES) + 1);
  }, 60_000);
});
