/**
 * A package whose server is after an API key (PERPLEXITY_API_KEY), for the
 * tests of where stored credentials go: which package, from which archive or
 * registry, is given the key stored with setup.
 */
import { stdioMcpServerSource } from './stdioMcpServer.js';

/** The credential the keyed package declares. */
export const KEYED_ENV = 'PERPLEXITY_API_KEY';

/**
 * A server whose one tool, `env`, answers with the SHA-256 of the key it was
 * given (`{"key": null}` when none), never the value itself.
 */
export const KEYED_HASH_SERVER = stdioMcpServerSource({
  name: 'keyed',
  tools: [{ name: 'env', inputSchema: { type: 'object' } }],
  imports: ["import { createHash } from 'node:crypto';"],
  prelude: `const key = process.env.${KEYED_ENV};`,
  call: "send({ id, result: { content: [{ type: 'text', text: JSON.stringify({ key: key === undefined ? null : createHash('sha256').update(key).digest('hex') }) }] } });",
});

/** Who the manifest of {@link keyedManifest} says the package is, and its one tool (run from bin/keyed.mjs). */
export interface KeyedIdentity {
  readonly plugin_id: string;
  readonly name: string;
  readonly version: string;
  /** The package's own claim: another package may spell it the same. */
  readonly namespace_owner: string;
  readonly tool: { readonly name: string; readonly description: string };
}

/** The manifest of a keyed package: bin/keyed.mjs, no power, and the one credential {@link KEYED_ENV} (alias perplexity-key). */
export function keyedManifest(identity: KeyedIdentity): Record<string, unknown> {
  return {
    manifest_schema_version: 1,
    plugin_id: identity.plugin_id,
    name: identity.name,
    version: identity.version,
    namespace_owner: identity.namespace_owner,
    shape: 'mcp-plugin',
    executable: 'bin/keyed.mjs',
    advertised_tools: [{ ...identity.tool, risk_class: 'read' }],
    declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
    requirements: {
      needs_user_creds: [KEYED_ENV],
      credential_descriptors: [{ alias: 'perplexity-key', env: KEYED_ENV, kind: 'api_key', display_name: 'Perplexity API key', setup_hint: 'From the service settings' }],
    },
  };
}
