/**
 * Choosing how a pinned Node interpreter is made to evaluate only the
 * verified main module, and the policy text it is given.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe('the main-module guard', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'node-main-guard-'));
    // `worker` names no file; `worker.js` beside it is what Node's extension fallback finds.
    writeFileSync(join(dir, 'worker.js'), "console.log('worker ran worker.js');\n");
    writeFileSync(
      join(dir, 'main.cjs'),
      `const { Worker } = require('node:worker_threads');
const entry = require('node:path').join(__dirname, 'worker');
new Worker(entry, { argv: process.argv.slice(2) }).on('error', (e) => console.log('worker failed', e.code));
`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (args: readonly string[]): string => spawnSync(process.execPath, ['--require', NODE_MAIN_GUARD, ...args], { encoding: 'utf8' }).stdout;

  it('resolves the main script to exactly its path: a file beside it with an extension does not run in its place', () => {
    expect(spawnSync(process.execPath, [join(dir, 'worker')], { encoding: 'utf8' }).stdout).toBe('worker ran worker.js\n');
    expect(spawnSync(process.execPath, ['--require', NODE_MAIN_GUARD, join(dir, 'worker')], { encoding: 'utf8' }).status).not.toBe(0);
  });

  // A worker's argv (given by the plugin) comes first in its process.argv, where the main thread's script is: the rule
  // taking it for a main script would refuse the worker's own entry when it is named that way.
  it('leaves worker threads to Node: a worker whose argv names its own entry still finds it as Node would', () => {
    expect(run([join(dir, 'main.cjs')])).toBe('worker ran worker.js\n');
    expect(run([join(dir, 'main.cjs'), join(dir, 'worker')])).toBe('worker ran worker.js\n');
  });
});
