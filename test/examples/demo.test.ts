/**
 * `npm run demo`, the first of the two commands the README gives a newcomer,
 * runs to the end: every step it prints is a ✓ and it exits 0 (it installs a
 * published server from the npm registry, as a user's first run would). On a
 * machine without bubblewrap it installs it as root, or says how.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

  it('without bubblewrap and not root, stops before anything else with the exact command to run', { timeout: 120_000 }, async () => {
    // A PATH with node and apt-get but no bwrap, and the demo run as nobody (a user who cannot install packages).
    const bin = await mkdtemp(join(tmpdir(), 'demo-no-bwrap-'));
    try {
      await chmod(bin, 0o755);
      await symlink(process.execPath, join(bin, 'node'));
      await symlink('/usr/bin/apt-get', join(bin, 'apt-get'));
      const run = spawnSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', 'env', `PATH=${bin}`, 'HOME=/tmp', 'node', '--import', 'tsx', join(root, 'scripts', 'demo.ts')],
        { cwd: root, encoding: 'utf8', timeout: 110_000 },
      );
      expect(run.status, run.stderr).toBe(1);
      expect(run.stdout).toBe(
        '✗ the demo runs plugins in the OS sandbox, and bubblewrap (bwrap) is not installed. Install it, then run npm run demo again:\n  sudo apt-get install -y bubblewrap\n',
      );
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
