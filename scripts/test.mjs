// The one test command (`npm test`): typecheck, lint, build, API report check, then
// vitest. Ends with the plain `N passed, N failed, N skipped` line that CI reads;
// skipped counts skipped and todo tests, so a skip cannot hide in the total.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

const run = (label, cmd, args) => {
  process.stdout.write(`\n== ${label}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  return r.status ?? 1;
};

const steps = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']],
  ['lint', 'npx', ['eslint', 'src']],
  ['build', 'npx', ['tsup']],
  ['api report (check)', 'npx', ['api-extractor', 'run']],
  ['api report of mcp-plugin-host/testing (check)', 'npx', ['api-extractor', 'run', '-c', 'api-extractor.testing.json']],
];
for (const [label, cmd, args] of steps) {
  if (run(label, cmd, args) !== 0) {
    process.stdout.write(`\n${label} failed\n0 passed, 1 failed, 0 skipped\n`);
    process.exit(1);
  }
}

const results = '.vitest-results.json';
rmSync(results, { force: true });
const status = run('vitest', 'npx', [
  'vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${results}`,
  ...process.argv.slice(2),
]);
let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const report = JSON.parse(readFileSync(results, 'utf8'));
  passed = report.numPassedTests;
  // A file that fails without a failing test (an import or hook error) counts once; a file whose tests failed is
  // already counted by its tests.
  const brokenFiles = (report.testResults ?? []).filter(
    (file) => file.status === 'failed' && !(file.assertionResults ?? []).some((test) => test.status === 'failed'),
  ).length;
  failed = report.numFailedTests + brokenFiles;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
} catch {
  failed = 1;
}
if (status !== 0 && failed === 0) failed = 1;
process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exit(status === 0 && failed === 0 ? 0 : 1);
