import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, HostError, isHostErrorCode, PluginHost, spellingOf, type HostErrorCode, type PluginHostOptions } from '../../src/index.js';

const seedCodes: HostErrorCode[] = [
  'PLUGIN_MANIFEST_NOT_FOUND', 'PLUGIN_MANIFEST_INVALID', 'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED',
  'PLUGIN_SHAPE_UNSUPPORTED', 'PLUGIN_BINDING_INVALID', 'PLUGIN_NAMESPACE_CONFLICT',
  'PLUGIN_EXECUTABLE_UNTRUSTED', 'PLUGIN_ENV_PROHIBITED', 'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID',
  'PLUGIN_SCHEMA_REF_INVALID', 'SCHEMA_REF_COLLISION', 'PROFILE_STRIP_NULLS_UNSAFE',
  'PLUGIN_SANDBOX_UNSUPPORTED', 'PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', 'PLUGIN_CATALOG_SCHEMA_UNSUPPORTED',
  'PLUGIN_LOCK_SCHEMA_UNSUPPORTED', 'PLUGIN_STATE_SCHEMA_UNSUPPORTED', 'RATE_LIMITED', 'AUTH_REQUIRED',
  'SERVICE_DOWN', 'INVALID_ARGS', 'PLUGIN_QUARANTINED', 'VARIANT_NOT_FOUND', 'VARIANT_QUARANTINED',
  'UNKNOWN_CAPABILITY',
];

describe('error registry', () => {
  it('registers every code the GUM contract names', () => {
    for (const code of seedCodes) expect(isHostErrorCode(code), code).toBe(true);
  });

  it('gives every code a meaning and a hint', () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      expect(info.meaning.length, code).toBeGreaterThan(10);
      expect(info.hint.length, code).toBeGreaterThan(3);
    }
  });

  it('spells each of the nine handshake failure classes exactly once', () => {
    const classes = ['launch_failed', 'handshake_failed', 'timeout', 'crashed', 'tool_not_exposed',
      'protocol_version_mismatch', 'capability_not_declared', 'capability_not_allowed'];
    for (const c of classes) {
      const owners = Object.keys(ERROR_CODES).filter((k) => spellingOf(k as HostErrorCode, 'handshake') === c);
      expect(owners, c).toHaveLength(1);
    }
    const malformed = Object.keys(ERROR_CODES).filter((k) => spellingOf(k as HostErrorCode, 'handshake') === 'malformed_response');
    expect(malformed.sort()).toEqual(['PLUGIN_FRAME_TOO_LARGE', 'PLUGIN_INVALID_JSON', 'PLUGIN_MALFORMED_RESPONSE']);
  });

  it('spells the mcptest host failures and the JSON-RPC codes', () => {
    const ndjson = Object.keys(ERROR_CODES).map((k) => spellingOf(k as HostErrorCode, 'ndjson')).filter(Boolean);
    expect(ndjson.sort()).toEqual(['InvalidJson', 'InvalidResponse', 'PluginCrashed', 'SpawnFailed', 'Timeout']);
    const rpc = Object.keys(ERROR_CODES).map((k) => spellingOf(k as HostErrorCode, 'jsonrpc')).filter((x) => x !== undefined);
    expect(rpc.sort()).toEqual([-32700, -32603, -32602, -32601, -32600].sort());
  });

  it("HOST_INVALID_OPTIONS's hint names the details a misspelled option carries and pages that exist", async () => {
    const profileDir = mkdtempSync(join(tmpdir(), 'registry-hint-'));
    try {
      const opened = await PluginHost.open({ profileDir, callTimeoutMS: 5_000 } as unknown as PluginHostOptions);
      expect(opened.isErr()).toBe(true);
      const error = opened._unsafeUnwrapErr();
      expect(error.code).toBe('HOST_INVALID_OPTIONS');
      expect(error.details).toMatchObject({ option: 'callTimeoutMS', closest: 'callTimeoutMs' });
      const { hint } = ERROR_CODES.HOST_INVALID_OPTIONS;
      for (const field of Object.keys(error.details ?? {})) expect(hint).toContain(`details.${field}`);
      // The pages and section the hint sends a reader to.
      expect(readFileSync(join(import.meta.dirname, '../../docs/embedding.md'), 'utf8')).toContain('\n## Opening a profile\n');
      expect(hint).toContain('docs/embedding.md, "Opening a profile"');
      expect(readFileSync(join(import.meta.dirname, '../../docs/cli.md'), 'utf8')).toContain('\n### Options for every command\n');
      expect(hint).toContain('docs/cli.md');
    } finally {
      rmSync(profileDir, { recursive: true, force: true });
    }
  });

  it('fills hint and retryability from the registry and serializes without a stack', () => {
    const e = new HostError('RATE_LIMITED', 'slow down', { retry_after_ms: 5000, source_error_code: 'RATE_LIMIT' });
    expect(e.retryable).toBe(true);
    expect(e.hint).toBe(ERROR_CODES.RATE_LIMITED.hint);
    expect(e.toJSON()).toEqual({
      code: 'RATE_LIMITED', message: 'slow down', hint: ERROR_CODES.RATE_LIMITED.hint,
      retryable: true, retry_after_ms: 5000, source_error_code: 'RATE_LIMIT',
    });
    expect(new HostError('AUTH_REQUIRED', 'x', { retryable: true }).retryable).toBe(true);
  });
});
