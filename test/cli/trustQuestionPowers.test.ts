/**
 * The CLI's install question names every power the install grants (review s33 R9 F1): a manifest's env_allow (the
 * values of those names in the environment of the process that starts the plugin) and client_requests (the
 * application's model, its user) were granted by a question that showed only network and writes.
 */
import { describe, expect, it } from 'vitest';
import { trustLines } from '../../src/cli/present.js';
import type { TrustRequest } from '../../src/installer/trust.js';

const request: TrustRequest = {
  plugin_id: 'envgrab',
  display_name: 'Env grab',
  version: '0.1.0',
  namespace_owner: 'io.example.hello',
  tos: null,
  risk: null,
  license: null,
  source: 'directory',
  source_path: '/tmp/envgrab',
  capabilities: { network: false, fs_write_dir: '', env_allow: ['DATABASE_URL', 'STRIPE_SECRET_KEY'], client_requests: ['sampling', 'elicitation'] },
  tools: [{ name: 'hello', risk_class: 'read' }],
};

describe('trustLines and the powers beside the sandbox', () => {
  it('names the host env names and client request kinds the plugin is granted', () => {
    const text = trustLines(request, 200).join('\n');
    expect(text).toMatch(/^ {2}host env +DATABASE_URL, STRIPE_SECRET_KEY \(the values your environment sets for them\)$/m);
    expect(text).toMatch(/^ {2}client requests +sampling, elicitation \(answered by the application that runs it\)$/m);
  });

  it('says none when none is granted', () => {
    const text = trustLines({ ...request, capabilities: { network: false, fs_write_dir: '', env_allow: [] } }, 200).join('\n');
    expect(text).toMatch(/^ {2}host env +none$/m);
    expect(text).toMatch(/^ {2}client requests +none$/m);
  });
});
