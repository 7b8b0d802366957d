/**
 * `npm run demo`, the first of the two commands the README gives a newcomer,
 * runs to the end: every step it prints is a ✓ and it exits 0 (it installs a
 * published server from the npm registry, as a user's first run would).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('npm run demo', () => {
  it('runs every step to the end and installs and calls a published server', { timeout: 300_000 }, async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'demo.ts')], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).not.toContain('✗');
    expect(stdout).toMatch(/✓ installed server-memory .* from npm/);
    expect(stdout).toMatch(/✓ plug\.server-memory\.read_graph \{\}/);
  });
});
