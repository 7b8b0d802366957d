/**
 * examples/plugin-author as a plugin author gets it: copied into a repository
 * of its own, `npm install` with mcp-plugin-host from the package this
 * repository packs (npm pack of a fresh build) and vitest from the registry,
 * then `npm test`. The repository's node_modules (and its .bin links) sit
 * beside plugin/, which is all the host installs. The README's first example
 * then runs as written in that repository.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { packageBuilds } from '../../tsup.config.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const SLOW = 600_000;
/** Real interpreters first, as a CI runner has them. */
const PATH = [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter);

let work: string;
let tarball: string;

/** The package as `npm pack` makes it from a fresh build (JavaScript only: the example needs no declarations). */
async function packThisPackage(): Promise<string> {
  const staging = join(work, 'package');
  for (const file of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']) await cp(join(REPO, file), join(staging, file)).catch(() => undefined);
  await cp(join(REPO, 'etc'), join(staging, 'etc'), { recursive: true });
  for (const options of packageBuilds({ dts: false })) {
    const entry = Object.fromEntries(Object.entries(options.entry as Record<string, string>).map(([name, path]) => [name, join(REPO, path)]));
    await build({ ...options, entry, outDir: join(staging, 'dist'), clean: false, dts: false, silent: true, config: false });
  }
  // Scripts off: the staging holds what the example needs, not docs/ or scripts/ that the registry README's prepack
  // reads (test/packaging/registryReadme.test.ts packs the whole package with them).
  const packed = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: staging, encoding: 'utf8' });
  return join(work, (JSON.parse(packed) as Array<{ filename: string }>)[0]?.filename ?? '');
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'plugin-author-repo-'));
  tarball = await packThisPackage();
}, SLOW);
afterAll(() => rm(work, { recursive: true, force: true }));

it('copied into its own repository, npm install and npm test pass', { timeout: SLOW }, async () => {
  const repo = join(work, 'word-tools');
  await cp(join(REPO, 'examples/plugin-author'), repo, { recursive: true, filter: (src) => !src.includes('node_modules') });
  const pkg = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  pkg.devDependencies['mcp-plugin-host'] = `file:${tarball}`;
  await writeFile(join(repo, 'package.json'), JSON.stringify(pkg, null, 2));
  const env = { ...process.env, PATH, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

  const installed = spawnSync('npm', ['install'], { cwd: repo, encoding: 'utf8', env, timeout: SLOW / 2 });
  expect(installed.status, installed.stderr).toBe(0);
  // What used to break `validate .`: npm's links in the repository root, now beside the plugin folder.
  expect(await readdir(join(repo, 'node_modules/.bin'))).toContain('mcp-plugin-host');

  const report = join(work, 'report.json');
  const tested = spawnSync('npm', ['test', '--', '--reporter=json', `--outputFile=${report}`], { cwd: repo, encoding: 'utf8', env, timeout: SLOW / 2 });
  expect(tested.status, `${tested.stdout}\n${tested.stderr}`).toBe(0);
  const summary = JSON.parse(await readFile(report, 'utf8')) as { numTotalTests: number; numPassedTests: number };
  expect(summary.numPassedTests).toBe(summary.numTotalTests);
  expect(summary.numTotalTests).toBeGreaterThanOrEqual(6);

  const validated = spawnSync(join(repo, 'node_modules/.bin/mcp-plugin-host'), ['validate', 'plugin', '--json'], { cwd: repo, encoding: 'utf8', env });
  expect(validated.status, validated.stderr).toBe(0);
  expect(JSON.parse(validated.stdout)).toMatchObject({ ok: true, plugin: { plugin_id: 'word-tools' }, checked: expect.arrayContaining(['tool list']) });

  // The README's first example, as written, with the plugin it tells you to scaffold.
  const initialized = spawnSync(join(repo, 'node_modules/.bin/mcp-plugin-host'), ['init', 'hello', '--template', 'python'], { cwd: repo, encoding: 'utf8', env });
  expect(initialized.status, initialized.stderr).toBe(0);
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const example = /## Use\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toContain("from 'mcp-plugin-host'");
  await writeFile(join(repo, 'use.mjs'), example ?? '');
  const used = spawnSync(process.execPath, ['use.mjs'], { cwd: repo, encoding: 'utf8', env: { ...env, XDG_DATA_HOME: join(work, 'data') } });
  expect(used.status, used.stderr).toBe(0);
  expect(used.stderr).toBe('');
  // console.log of the MCP CallToolResult: the plugin's JSON envelope in its text block.
  expect(used.stdout).toContain('"data": {"text": "world"}');
  expect(used.stdout).toContain('isError: false');
});
