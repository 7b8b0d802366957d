/**
 * The README the npm registry shows: the package declares no repository, so
 * a relative link on the registry page leads nowhere. The packed README links
 * each file into this version's tarball on unpkg, every such file ships, and
 * the repository's README is left as it was.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packLibrary } from '../support/packedLibrary.js';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
const LINK = /\]\(([^)\s]+)\)/g;

let scratch: string;
let tarball: string;
let shipped: Set<string>;
let packedReadme: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'registry-readme-'));
  tarball = await packLibrary(scratch);
  const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
  shipped = new Set(stdout.split('\n').filter(Boolean).map((entry) => entry.replace(/^package\//, '')));
  packedReadme = (await run('tar', ['-xzOf', tarball, 'package/README.md'], { maxBuffer: 4 * 1024 * 1024 })).stdout;
}, 600_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('the README on the registry page', () => {
  it('links every file it names into this version of the package, and each of those files ships', async () => {
    const manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { name: string; version: string };
    const base = `https://unpkg.com/${manifest.name}@${manifest.version}/`;
    const targets = [...packedReadme.matchAll(LINK)].map((match) => match[1]!);
    const intoPackage = targets.filter((target) => target.startsWith(base));
    expect(intoPackage.length).toBeGreaterThanOrEqual(5);
    expect(targets.filter((target) => !/^(https?:|mailto:|#)/.test(target))).toEqual([]);
    for (const target of intoPackage) {
      const path = target.slice(base.length).split('#')[0]!;
      const present = path.endsWith('/') ? [...shipped].some((file) => file.startsWith(path)) : shipped.has(path);
      expect(present, `${path} is linked but not in the tarball`).toBe(true);
    }
  });

  it('leaves the repository README with its relative links once packed', async () => {
    const repositoryReadme = await readFile(join(REPO, 'README.md'), 'utf8');
    const copied = await readFile(join(scratch, 'library', 'README.md'), 'utf8');
    expect(copied).toBe(repositoryReadme);
    expect(existsSync(join(scratch, 'library', '.README.repository.md'))).toBe(false);
    expect(repositoryReadme).toContain('](docs/embedding.md)');
  });

  it('refuses to pack a README that links a file the package does not ship', async () => {
    const dir = join(scratch, 'unshipped');
    await mkdir(join(dir, 'docs'), { recursive: true });
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', files: ['README.md'] }));
    await writeFile(join(dir, 'docs', 'guide.md'), '# Guide\n');
    const readme = 'See [the guide](docs/guide.md).\n';
    await writeFile(join(dir, 'README.md'), readme);
    const outcome = await run(process.execPath, [join(REPO, 'scripts', 'registry-readme.mjs'), 'prepack'], { cwd: dir }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('docs/guide.md');
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe(readme);
  });
});
