/**
 * The root entry names the design card's eight modules under their card names, ErrorMapper and ExecutableBinding
 * included (they were loose functions before), and each works through that name.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';
import { scratch, type Scratch } from '../binding/helpers/pluginTree.js';

const CARD = ['ManifestValidator', 'EnvDenylist', 'NamespaceLock', 'ExecutableBinding', 'CatalogStore', 'ErrorMapper', 'SandboxSpawner', 'PluginHost'];
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

describe('the design card modules in the root entry', () => {
  it('are all there, each a class', () => {
    expect(CARD.filter((name) => typeof (root as Record<string, unknown>)[name] !== 'function')).toEqual([]);
  });

  it('ErrorMapper maps envelopes and isError results with the seeds\' table', () => {
    const { ErrorMapper } = root;
    expect(ErrorMapper.map({ success: false, error: 'slow down', error_code: 'RATE_LIMIT', retryable: true, retry_after_ms: 500 })).toMatchObject({
      code: 'RATE_LIMITED',
      retryable: true,
      retry_after_ms: 500,
    });
    expect(ErrorMapper.mapCode('INVALID_INPUT')).toBe('INVALID_ARGS');
    const result = { isError: true, content: [{ type: 'text', text: JSON.stringify({ success: false, error: 'log in', error_code: 'AUTH_EXPIRED' }) }] };
    expect(ErrorMapper.mapCallToolError(result).code).toBe('AUTH_REQUIRED');
    const envelope = ErrorMapper.parseEnvelope('{"success":false,"error":"down","error_code":"SERVICE_DOWN","retryable":true}')._unsafeUnwrap();
    expect(ErrorMapper.mapEnvelope(envelope)).toMatchObject({ code: 'SERVICE_DOWN', retryable: true });
  });

  it('ExecutableBinding pins an executable and an ES module entry and verifies both again', async () => {
    const { ExecutableBinding } = root;
    const native = readFileSync('/usr/bin/true');
    s.write('bin/tool', native);
    const record = (await ExecutableBinding.bind({ installRoot: s.root, executable: 'bin/tool' }))._unsafeUnwrap();
    expect(record.executable_sha256).toBe(sha(native));
    const verified = (await ExecutableBinding.verify(record, { copyDir: s.copyDir }))._unsafeUnwrap();
    expect(verified.sha256).toBe(sha(native));
    verified.release();

    const source = 'export function createPlugin() {}\n';
    s.write('index.mjs', source, 0o644);
    const entry = (await ExecutableBinding.bindModuleEntry({ installRoot: s.root, entry: 'index.mjs' }))._unsafeUnwrap();
    expect(entry.executable_sha256).toBe(sha(Buffer.from(source)));
    const verifiedEntry = (await ExecutableBinding.verifyModuleEntry(entry, { copyDir: s.copyDir }))._unsafeUnwrap();
    expect(verifiedEntry.sha256).toBe(sha(Buffer.from(source)));
    verifiedEntry.release();
    s.write('index.mjs', 'export function createPlugin() { return 1; }\n', 0o644);
    const refused = (await ExecutableBinding.verifyModuleEntry(entry, { copyDir: s.copyDir }))._unsafeUnwrapErr();
    expect(refused.details.quarantine).toBe(true);
  });
});
