/**
 * The tool list a host records after a start checked before its first call:
 * where it lives, that a freshly opened host on the same profile uses it, and
 * that a record that does not fit the pinned code or the manifest is not trusted.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { answered, HostPool, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

const recordOf = (dir: string): string => join(dir, 'tool-lists', 'host-probe.json');
const readRecord = async (dir: string): Promise<{ pins: string; tools: { name: string }[] }> => JSON.parse(await readFile(recordOf(dir), 'utf8'));

async function recorded(dir: string): Promise<{ pins: string; tools: { name: string }[] }> {
  for (let i = 0; i < 100; i++) {
    try {
      return await readRecord(dir);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  return readRecord(dir);
}

describe('recorded tool lists', () => {
  it('records the verified list of the first start, and a freshly opened host calls with it', async () => {
    const dir = await pool.profile();
    const first = await pool.installed(dir, ['probe']);
    answered(await first.call('plug.host-probe.echo', { message: 'one' }));
    await first.close();
    const record = await recorded(dir);
    expect(record.pins).toMatch(/^[0-9a-f]{64}$/);
    const declared = answered(await (await pool.open(dir)).tools('host-probe')).map((t) => t.name);
    expect(record.tools.map((t) => t.name).sort()).toEqual([...declared].sort());

    const second = await pool.open(dir);
    answered(await second.call('plug.host-probe.echo', { message: 'two' }));
  });

  it('drops the record when the plugin is removed', async () => {
    const dir = await pool.profile();
    const host = await pool.installed(dir, ['probe']);
    answered(await host.call('plug.host-probe.echo', { message: 'one' }));
    await recorded(dir);
    answered(await host.remove('host-probe'));
    await expect(readFile(recordOf(dir), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it.each([
    ['names a tool the manifest does not declare', (r: { pins: string; tools: { name: string }[] }) => ({ ...r, tools: [...r.tools, { name: 'undeclared', inputSchema: { type: 'object' } }] })],
    ['was recorded for other pins', (r: { pins: string; tools: { name: string }[] }) => ({ ...r, pins: '0'.repeat(64), tools: r.tools.slice(1) })],
    ['is not a tool list', (r: { pins: string; tools: { name: string }[] }) => ({ pins: r.pins, tools: 'nope' })],
  ])('does not trust a record that %s: the start checks tools/list first and records it again', async (_label, alter) => {
    const dir = await pool.profile();
    const first = await pool.installed(dir, ['probe']);
    answered(await first.call('plug.host-probe.echo', { message: 'one' }));
    await first.close();
    const good = await recorded(dir);
    await writeFile(recordOf(dir), JSON.stringify(alter(good)));

    const second = await pool.open(dir);
    answered(await second.call('plug.host-probe.echo', { message: 'two' }));
    await second.close();
    for (let i = 0; i < 100 && JSON.stringify(await readRecord(dir).catch(() => undefined)) !== JSON.stringify(good); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await readRecord(dir)).toEqual(good);
  });
});
