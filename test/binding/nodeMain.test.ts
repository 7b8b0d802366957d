/**
 * Choosing how a pinned Node interpreter is made to evaluate only the
 * verified main module, and the policy text it is given.
 */
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { integrityPolicy, integrityPolicyOptions, NODE_MAIN_GUARD, nodeMainLoadingFor, nodeMainLoadingForScript, probeNodeMainLoading } from '../../src/binding/nodeMain.js';

describe('nodeMainLoadingFor', () => {
  it.each([
    ['v20.11.0', 'integrity_policy'],
    ['v20.20.2\n', 'integrity_policy'],
    ['v21.3.0', 'integrity_policy'],
    ['v20.10.0', 'loader_hook'],
    ['v21.2.0', 'loader_hook'],
    ['v22.14.0', 'loader_hook'],
    ['v22.15.0', 'in_thread_hook'],
    ['v23.4.0', 'loader_hook'],
    ['v23.5.0', 'in_thread_hook'],
    ['v24.0.0', 'in_thread_hook'],
    ['v18.20.0', 'loader_hook'],
    ['not a version', 'loader_hook'],
  ])('%s → %s', (version, method) => {
    expect(nodeMainLoadingFor(version)).toBe(method);
  });
});

describe('probeNodeMainLoading', () => {
  it('asks the interpreter itself for its version', async () => {
    expect(await probeNodeMainLoading(process.execPath)).toBe(nodeMainLoadingFor(process.version));
  });

  it('falls back to the loader hook when the program cannot answer', async () => {
    expect(await probeNodeMainLoading('/usr/bin/false')).toBe('loader_hook');
    expect(await probeNodeMainLoading('/nonexistent/node')).toBe('loader_hook');
  });
});

describe('integrityPolicy', () => {
  const digest = 'ab'.repeat(32);

  it('pins the main module by URL with its SHA-256 in Subresource Integrity form and leaves other file modules free', () => {
    const policy = JSON.parse(integrityPolicy('/plugins/p 1/bin/main.mjs', digest)) as Record<string, unknown>;
    expect(policy).toEqual({
      resources: {
        'file:///plugins/p%201/bin/main.mjs': { integrity: `sha256-${Buffer.from(digest, 'hex').toString('base64')}`, dependencies: true },
      },
      scopes: { 'file:': { integrity: true, dependencies: true }, 'data:': { integrity: true, dependencies: true } },
    });
  });

  it('keeps the main module at exactly its own path (guard, no link resolution) so that the policy entry applies to it', () => {
    expect(integrityPolicyOptions('/proc/self/fd/3')).toEqual([
      '--preserve-symlinks-main',
      '--disable-warning=ExperimentalWarning',
      '--experimental-policy=/proc/self/fd/3',
      '--require',
      NODE_MAIN_GUARD,
    ]);
    expect(existsSync(NODE_MAIN_GUARD)).toBe(true);
  });
});

describe('nodeMainLoadingForScript', () => {
  it('keeps the policy for a script that is valid UTF-8 and falls back to the loader hook otherwise (Node checks the decoded text)', () => {
    expect(nodeMainLoadingForScript('integrity_policy', Buffer.from('// café\n'))).toBe('integrity_policy');
    expect(nodeMainLoadingForScript('integrity_policy', Buffer.from([0x2f, 0x2f, 0x20, 0x63, 0x61, 0x66, 0xe9, 0x0a]))).toBe('loader_hook');
    expect(nodeMainLoadingForScript('in_thread_hook', Buffer.from([0xe9]))).toBe('in_thread_hook');
  });
});
