/** Records for catalog tests: a plausible installed plugin, parameterized by id. */
import type { PluginRecords } from '../../../src/catalog/catalogContents.js';
import { pluginState } from '../../support/pluginState.js';

const HEX = (seed: string): string => Buffer.from(seed.padEnd(32, '0').slice(0, 32)).toString('hex');

/** The three records an install of plugin `id` writes. */
export function pluginRecords(id: string, installedAt = '2026-05-19T00:00:00.000Z'): PluginRecords {
  const root = `/profiles/test/plugins/${id}/1.0.0`;
  return {
    lock: {
      plugin_id: id,
      version: '1.0.0',
      namespace_owner: `io.example.${id}`,
      package: { source: `/src/${id}`, ref: '1.0.0', checksum: `sha256:${HEX(id)}` },
      binding: {
        executable_path: 'bin/server',
        executable_sha256: HEX(`exe-${id}`),
        argv_normalized: [`${root}/bin/server`],
        install_root: root,
      },
    },
    state: pluginState({ installed_at: installedAt }),
    descriptor: { plugin_id: id, name: `Plugin ${id}`, version: '1.0.0', shape: 'mcp-plugin', capabilities: { network: false, fs_write_dir: '', env_allow: [] } },
    variants: [
      {
        op_id: `plug.${id}.search`,
        variant_id: `plug.${id}.search.v1`,
        plugin_id: id,
        tool_name: 'search',
        risk_class: 'read',
        confirmation_policy: 'none',
        schema_hashes: { [`${id}.search.request`]: HEX(`req-${id}`) },
        backend_kind: 'mcp-plugin',
      },
    ],
  };
}
