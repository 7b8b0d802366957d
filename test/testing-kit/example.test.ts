// The worked example in examples/plugin-author is a plugin author's repository;
// its own vitest suite (which uses mcp-plugin-host/testing) must pass as part of ours.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

it('runs the plugin author example suite and every one of its tests passes', { timeout: 180_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), 'example-suite-'));
  try {
    const report = join(out, 'report.json');
    const run = spawnSync('npx', ['vitest', 'run', '--root', 'examples/plugin-author', '--reporter=json', `--outputFile=${report}`], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 170_000,
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const summary = JSON.parse(readFileSync(report, 'utf8')) as { numTotalTests: number; numPassedTests: number; numFailedTests: number };
    expect(summary.numFailedTests).toBe(0);
    expect(summary.numPassedTests).toBe(summary.numTotalTests);
    expect(summary.numTotalTests).toBeGreaterThanOrEqual(6);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
