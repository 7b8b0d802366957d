/** TrustRequest fixtures for the tests of the CLI's install question (src/cli/present.ts). */
import type { TrustRequest } from '../../src/installer/trust.js';

/**
 * The install of `same-name@1.0.2` from npm, one read tool, no powers: the
 * request the registry-change questions start from (the same npm name may
 * come from another registry).
 */
export const SAME_NAME_FROM_NPM: TrustRequest = {
  plugin_id: 'same-name',
  display_name: 'same-name',
  version: '1.0.2',
  namespace_owner: 'npm:same-name',
  tos: null,
  risk: null,
  license: null,
  source: 'npm',
  source_path: 'same-name@1.0.2',
  capabilities: { network: false, fs_write_dir: '', env_allow: [] },
  tools: [{ name: 'look', risk_class: 'read' }],
};
