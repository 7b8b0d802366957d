import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from 'neverthrow';
import { expect } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import type { HostErrorCode } from '../../src/errors/registry.js';
import type { StagedPackage } from '../../src/installer/openPackageSource.js';

/** A temporary directory with a staging root inside it. */
export interface Workspace {
  readonly dir: string;
  readonly stagingRoot: string;
  /** Writes a file into the workspace and returns its path. */
  file(name: string, bytes: Buffer | string): Promise<string>;
  /** Removes everything. */
  dispose(): Promise<void>;
}

export async function workspace(): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), 'mph-installer-'));
  const stagingRoot = join(dir, 'staging');
  return {
    dir,
    stagingRoot,
    async file(name, bytes) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      return path;
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Asserts the result is the expected error and that staging left nothing behind. */
export async function expectRefused(
  result: Result<StagedPackage, HostError>,
  stagingRoot: string,
  code: HostErrorCode,
  details: Record<string, unknown> = {},
): Promise<HostError> {
  if (result.isOk()) {
    await result.value.discard();
    expect.fail(`expected ${code}, but the package was staged`);
  }
  expect(result.error.code, result.error.message).toBe(code);
  expect(result.error.details).toMatchObject(details);
  expect(await readdir(stagingRoot).catch(() => [])).toEqual([]);
  return result.error;
}

/** Unwraps a staged package or fails with the error. */
export function expectStaged(result: Result<StagedPackage, HostError>): StagedPackage {
  if (result.isErr()) expect.fail(`${result.error.code}: ${result.error.message} ${JSON.stringify(result.error.details)}`);
  return result.value;
}
