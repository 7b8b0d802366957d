/**
 * The bytes one `tools/list` may take across its pages: the host lists a
 * plugin's tools by itself after every `tools/list_changed` the plugin sends,
 * and holds every page until the last. Real plugin process (mcp-raw
 * --heavy-tools: 60 pages of about 1 MB) through McpSession.
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

const pagesAsked = (process: PluginProcess | undefined): number =>
  (process?.stderrTail() ?? '').split('\n').filter((line) => line.startsWith('received tools/list ')).length;

describe('a tools/list whose pages together are larger than etc/plugin-answers.json allows', () => {
  it('ends as PLUGIN_MALFORMED_RESPONSE once the bound is passed, without asking for the remaining pages', async () => {
    const processes: PluginProcess[] = [];
    const session = McpSession.create({
      launch: launchCommand([process.execPath, RAW, '--heavy-tools'], { onSpawn: (p) => processes.push(p) }),
      expectedTools: ['shaped', 'raw'],
    })._unsafeUnwrap();
    sessions.push(session);
    // Before the bound the host read all 60 pages (60 MB of one list held at once) and the start succeeded.
    const listed = (await session.listTools())._unsafeUnwrapErr();
    expect(listed.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(listed.details).toMatchObject({ phase: 'tools/list', max_list_bytes: pluginAnswerLimits.maxListBytes });
    expect(pagesAsked(processes.at(-1))).toBe(Math.floor(pluginAnswerLimits.maxListBytes / PAGE_BYTES) + 1);
  }, 60_000);
});
