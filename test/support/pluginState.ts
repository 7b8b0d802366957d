/** A plugin's row of plugin-state.json: built for tests that need one, read back for tests that check one. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PluginStateRecord } from '../../src/catalog/catalogTypes.js';

/** The state row a fresh install writes (active, never run, nothing quarantined), with `fields` changed. */
export function pluginState(fields: Partial<PluginStateRecord> = {}): PluginStateRecord {
  return {
    status: 'active',
    installed_at: '2026-05-19T00:00:00.000Z',
    activated_at: null,
    retry_count: 0,
    next_retry_at: null,
    quarantined_at: null,
    quarantine_reason: null,
    last_error_code: null,
    canary: { status: 'never_run', last_run_at: null },
    ...fields,
  };
}

/** One plugin's row as the profile's plugin-state.json holds it now. */
export async function readStateRow(profileDir: string, pluginId: string): Promise<Record<string, unknown>> {
  const file = JSON.parse(await readFile(join(profileDir, 'plugin-state.json'), 'utf8')) as { plugins: Record<string, Record<string, unknown>> };
  return file.plugins[pluginId]!;
}
