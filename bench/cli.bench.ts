/**
 * CLI start-up (issue 17): `mcp-plugin-host --version` and `validate <manifest>`
 * as whole processes, beside `node -e 0` (Node's own start-up) in the same run.
 * The CLI is built with the package's own ESM build settings into a scratch
 * directory, so the figure is the shipped chunk layout's, not a stale dist/.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Options } from 'tsup';
import { packageBuilds } from '../tsup.config.js';
import { result, timeMs, type BenchResult } from './harness.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const RUNS = 15;
const MANIFEST = join(REPO, 'examples/plugin-author/plugin/manifest.json');

/** The package build that holds the `cli` entry (ESM, shared chunks). */
function cliBuild(): Options {
  const found = packageBuilds({ dts: false }).find((b) => typeof b.entry === 'object' && !Array.isArray(b.entry) && 'cli' in b.entry);
  if (found === undefined) throw new Error('tsup.config.ts has no build with a cli entry');
  return found;
}

const processMs = (args: readonly string[]): Promise<number> => timeMs(() => execFileSync(process.execPath, args, { stdio: 'ignore' }));

export async function run(): Promise<BenchResult[]> {
  const out = await mkdtemp(join(tmpdir(), 'bench-cli-'));
  try {
    const entry = Object.fromEntries(Object.entries(cliBuild().entry as Record<string, string>).map(([name, path]) => [name, join(REPO, path)]));
    await build({ ...cliBuild(), entry, outDir: out, clean: false, dts: false, sourcemap: false, silent: true, config: false });
    await symlink(join(REPO, 'node_modules'), join(out, 'node_modules'), 'dir');
    await writeFile(join(out, 'package.json'), JSON.stringify({ name: 'mcp-plugin-host', version: '0.0.0-bench', type: 'module' }));
    const cli = join(out, 'cli.js');
    const version = [cli, '--version'];
    const validate = [cli, 'validate', MANIFEST];
    for (const args of [['-e', '0'], version, validate]) await processMs(args);

    const node: number[] = [];
    const versionMs: number[] = [];
    const validateMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      node.push(await processMs(['-e', '0']));
      versionMs.push(await processMs(version));
      validateMs.push(await processMs(validate));
    }
    const note = `${RUNS} interleaved runs of each process after one warm-up; the CLI built from tsup.config.ts's ESM build into a scratch directory.`;
    return [
      result(
        {
          name: 'CLI start-up: mcp-plugin-host --version',
          baselineName: 'node -e 0',
          unit: 'ms',
          compare: 'ratio',
          target: 1.6,
          better: 'lower',
          absolute: { target: 100, better: 'lower' },
          note: `${note} Issue 17: ≤ 100 ms on the figure; the ratio bounds what the CLI adds to Node's own start-up.`,
        },
        versionMs,
        node,
      ),
      result(
        {
          name: 'CLI start-up: mcp-plugin-host validate <manifest>',
          baselineName: 'node -e 0',
          unit: 'ms',
          compare: 'ratio',
          target: 5,
          better: 'lower',
          absolute: { target: 300, better: 'lower' },
          note: `${note} A lone manifest (examples/plugin-author): the manifest and host-policy checks, no host opened. Issue 17: ≤ 300 ms on the figure.`,
        },
        validateMs,
        node,
      ),
    ];
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
