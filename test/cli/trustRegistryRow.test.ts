/**
 * The CLI's install question shows a registry change (TrustRequest.registry_change) beside the owner: the same
 * npm name on another registry may be another publisher's package, which the owner row alone does not tell.
 */
import { describe, expect, it } from 'vitest';
import { trustLines } from '../../src/cli/present.js';
import { SAME_NAME_FROM_NPM as request } from './trustRequests.js';

describe('trustLines and a registry change', () => {
  it('names both registries in a row of its own after the owner', () => {
    const lines = trustLines({ ...request, registry_change: { from: 'https://npm.internal.example/', to: 'https://registry.npmjs.org/' } }, 200);
    const owner = lines.findIndex((l) => l.includes('namespace owner'));
    expect(lines[owner + 1]).toMatch(/^ {2}npm registry +https:\/\/npm\.internal\.example\/ → https:\/\/registry\.npmjs\.org\/, not the one the version accepted before came from$/);
  });

  it('shows an unrecorded registry as the default it is counted as, and no row without a change', () => {
    const lines = trustLines({ ...request, registry_change: { from: null, to: 'http://127.0.0.1:4873/' } }, 200);
    expect(lines.join('\n')).toContain('npm registry      https://registry.npmjs.org/ (not recorded: installed before registries were) → http://127.0.0.1:4873/');
    expect(trustLines(request, 200).join('\n')).not.toContain('npm registry');
  });
});
