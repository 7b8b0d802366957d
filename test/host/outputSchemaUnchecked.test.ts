/**
 * A published server with one tool whose output schema is over the host's
 * compile bounds (etc/plugin-answers.json): through PluginHost, in the
 * sandbox, every tool of it stays usable; that tool's structuredContent is
 * passed on unchecked and an `output_schema:unchecked` event says so once
 * per process, while its other tools are still checked against theirs.
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { waitUntil } from '../support/eventually.js';
import { answered, HostPool } from '../support/hostHarness.js';

const ID = 'host-unchecked-schema';
const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures/plugins', ID);
const op = (tool: string): string => `plug.${ID}.${tool}`;

const pool = new HostPool();
const built: string[] = [];
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(built.splice(0).map((d) => rm(d, { recursive: true, force: true }))));

describe('a tool whose listed output schema is over the compile bounds', () => {
  it('leaves the plugin usable: both tools called, the large one unchecked, the small one still checked, one event per process', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    const pkg = await packageFixturePlugin(FIXTURE);
    built.push(pkg);
    answered(await installer.install(pkg, { canary: false }));
    await installer.close();
    const host = await pool.open(dir);
    const unchecked: HostEventMap['output_schema:unchecked'][] = [];
    const listChanged: HostEventMap['list_changed'][] = [];
    const spawns: HostEventMap['spawn'][] = [];
    host.events.on('output_schema:unchecked', (event) => unchecked.push(event));
    host.events.on('list_changed', (event) => listChanged.push(event));
    host.events.on('spawn', (event) => spawns.push(event));

    const large = answered(await host.call(op('large'), { structured: { field0: 7, other: true } }));
    if (large.shape !== 'mcp-plugin') throw new Error(`answered by a ${large.shape} plugin`);
    // field0 is a string in the schema: unchecked, the plugin's own answer is passed on as it is.
    expect(large.value.structuredContent).toEqual({ field0: 7, other: true });
    const small = answered(await host.call(op('small'), { structured: { n: 1 } }));
    if (small.shape !== 'mcp-plugin') throw new Error(`answered by a ${small.shape} plugin`);
    expect(small.value.structuredContent).toEqual({ n: 1 });
    // The plugin lists the same tools again, twice: still one event for its process.
    answered(await host.call(op('small'), { structured: { n: 2 }, relist: true }));
    answered(await host.call(op('small'), { structured: { n: 3 }, relist: true }));
    await waitUntil(() => listChanged.length >= 2);
    expect(listChanged.every((change) => change.code === undefined)).toBe(true);
    expect(spawns).toHaveLength(1);
    expect(unchecked).toHaveLength(1);
    expect(unchecked[0]).toEqual({ plugin_id: ID, tool: 'large', bound: 'bytes', schema_bytes: expect.any(Number) });
    expect(unchecked[0]!.schema_bytes).toBeGreaterThan(pluginAnswerLimits.maxSchemaBytes);
    const tools = answered(await host.tools(ID));
    expect(tools.map((tool) => [tool.name, tool.outputSchemaUnchecked]).sort()).toEqual([
      ['large', 'bytes'],
      ['small', undefined],
    ]);
    // Last: a malformed answer counts toward the plugin's quarantine.
    const refused = (await host.call(op('small'), { structured: { n: 'one' } }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(refused.message).toContain('output schema');
  }, 120_000);
});
