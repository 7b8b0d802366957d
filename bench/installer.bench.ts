/**
 * Installer staging cost. The package source half of an install verifies and
 * extracts an archive into a private staging tree; its baseline is node-tar's
 * own extractor (`tar.x`) unpacking the same archive in the same run, so the
 * ratio is the price of the checks (hashing, per-entry validation, counting,
 * exact modes, no links). Target: at most 2.5× `tar.x`.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { openPackageSource } from '../src/installer/openPackageSource.js';
import { repeat, result, timeMs, type BenchResult } from './harness.js';

const RUNS = 7;

async function packageTree(dir: string, files: number, bytesPerFile: number): Promise<void> {
  await mkdir(join(dir, 'package', 'lib'), { recursive: true });
  await writeFile(join(dir, 'package', 'manifest.json'), '{"manifest_schema_version":1}');
  for (let i = 0; i < files; i++) {
    await writeFile(join(dir, 'package', 'lib', `f${i}.js`), randomBytes(bytesPerFile).toString('base64'));
  }
}

async function measure(name: string, files: number, bytesPerFile: number): Promise<BenchResult> {
  const work = await mkdtemp(join(tmpdir(), 'mph-bench-installer-'));
  try {
    await packageTree(join(work, 'src'), files, bytesPerFile);
    const archive = join(work, 'plugin.tgz');
    await tar.c({ gzip: true, cwd: join(work, 'src'), file: archive }, ['package']);
    const stagingRoot = join(work, 'staging');
    const ours: number[] = [];
    const baseline: number[] = [];
    const extractWithTar = async (): Promise<void> => {
      const target = join(work, `x-${baseline.length}`);
      await mkdir(target);
      baseline.push(await timeMs(() => tar.x({ file: archive, cwd: target })));
      await rm(target, { recursive: true, force: true });
    };
    const stage = async (): Promise<void> => {
      let discard: (() => Promise<void>) | undefined;
      ours.push(
        await timeMs(async () => {
          const staged = await openPackageSource(archive, { stagingRoot });
          if (staged.isErr()) throw staged.error;
          discard = staged.value.discard;
        }),
      );
      await discard?.();
    };
    // One unmeasured run of each warms the page cache for the archive, then the sides alternate which goes first.
    await extractWithTar();
    await stage();
    baseline.length = 0;
    ours.length = 0;
    let round = 0;
    await repeat(RUNS, async () => {
      for (const side of round++ % 2 === 0 ? [extractWithTar, stage] : [stage, extractWithTar]) await side();
      return 0;
    });
    return result(
      {
        name,
        baselineName: 'tar.x of the same archive',
        unit: 'ms',
        compare: 'ratio',
        target: 2.5,
        better: 'lower',
        note: `${files} files of ${bytesPerFile} random bytes (base64), ${RUNS} runs after one warm-up of each, alternating which side goes first; staging includes SHA-256 of the archive and a private copy of it`,
      },
      ours,
      baseline,
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs the installer benchmarks. */
export async function run(): Promise<BenchResult[]> {
  return [
    await measure('stage a .tgz of 1,000 small files', 1000, 2048),
    await measure('stage a .tgz of 8 large files (16 MiB)', 8, 1536 * 1024),
  ];
}
