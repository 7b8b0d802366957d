/**
 * `init` scaffolds a plugin repository whose own test suite passes as
 * written: each template is created, its plugin/ folder validated by the
 * CLI, and its tests (on mcp-plugin-host/testing, the kit's source here)
 * run with this repository's vitest against the real sandbox.
 */
import { spawnSync } from 'node:child_process';
import { readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const SLOW = 240_000;
/** Real interpreters first: a version manager's shim is refused as an interpreter. */
const PATH = [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter);

let work: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  work = await tempDir('mcp-cli-init-');
});
afterAll(() => work.dispose());

/** Runs the scaffold's suite with this repository's vitest, `mcp-plugin-host/testing` resolved to the kit's source. */
async function runSuite(dir: string): Promise<{ status: number | null; output: string; passed: number; total: number }> {
  await writeFile(
    join(dir, 'vitest.kit-source.config.mjs'),
    `import base from './vitest.config.mjs';\nexport default { ...base, resolve: { alias: { 'mcp-plugin-host/testing': ${JSON.stringify(join(REPO, 'src/testing/index.ts'))} } } };\n`,
  );
  const report = join(dir, 'report.json');
  const run = spawnSync(join(REPO, 'node_modules/.bin/vitest'), ['run', '--config', 'vitest.kit-source.config.mjs', '--reporter=json', `--outputFile=${report}`], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH },
    timeout: SLOW - 20_000,
  });
  const summary = JSON.parse(await readFile(report, 'utf8')) as { numTotalTests: number; numPassedTests: number };
  return { status: run.status, output: `${run.stdout}\n${run.stderr}`, passed: summary.numPassedTests, total: summary.numTotalTests };
}

describe('init', () => {
  it.each(['node', 'python', 'mcpb'])('--template %s: plugin/, a test suite that passes, a CI workflow', { timeout: SLOW }, async (template) => {
    const dir = join(work.path, `${template}-tools`);
    const made = await cli(['init', dir, '--template', template, '--json']);
    expect(made.code).toBe(0);
    const files = json(made).files as string[];
    expect(files).toEqual(expect.arrayContaining(['.github/workflows/plugin.yml', '.gitignore', 'package.json', 'plugin/manifest.json', 'test/plugin.test.mjs']));
    expect(await readFile(join(dir, '.github/workflows/plugin.yml'), 'utf8')).toContain('mcp-plugin-host validate plugin --format github');
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies['mcp-plugin-host']).toMatch(/^\^\d+\.\d+\.\d+/);
    // What npm install would provide (the SDK, esbuild, vitest), from this repository.
    await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
    if (template === 'node') {
      const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, encoding: 'utf8' });
      expect(built.status, built.stderr).toBe(0);
    }
    const suite = await runSuite(dir);
    expect(suite.status, suite.output).toBe(0);
    expect(suite.passed).toBe(suite.total);
    expect(suite.total).toBe(5);
    const validated = await cli(['validate', join(dir, 'plugin'), '--json'], { env: { PATH } });
    expect(json(validated)).toMatchObject({ ok: true, plugin: { plugin_id: `${template}-tools` }, violations: [] });
  });

  it('refuses a directory that is not empty, and an id that is not one', async () => {
    const full = join(work.path, 'full');
    await cli(['init', full]);
    expect((await stat(join(full, 'package.json'))).isFile()).toBe(true);
    const again = await cli(['init', full]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('is not empty');
    const badId = await cli(['init', join(work.path, 'x'), '--id', 'Bad_Id']);
    expect(badId.code).toBe(2);
    expect(await readdir(work.path)).not.toContain('x');
  });
});
