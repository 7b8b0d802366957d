/**
 * An `npm:` server given again with exactly the files an earlier install
 * pinned (same version, same bytes, no manifest of its own), under the same
 * grant: the manifest that install generated from the server's `tools/list`
 * stands in for a new introspection start, so none of the package's code
 * runs to answer what is already recorded for those very bytes. The
 * install then finds the same tree and reports it unchanged (or repairs an
 * install root changed since, with that same manifest).
 */
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pinnedEntries, type PackageTreePin } from '../binding/packageTree.js';
import { isRecord } from '../manifest/access.js';
import { sameAsPinned } from './sameTree.js';

/** The file an introspected npm server's generated manifest is written to (openNpmSource). */
const GENERATED_MANIFEST = 'manifest.json';

/** Everything but the tool list (`advertised_tools`, what the start answered), in the order the generator writes it. */
function withoutTools(doc: Readonly<Record<string, unknown>>): string {
  const { advertised_tools: _tools, ...rest } = doc;
  return JSON.stringify(rest);
}

/**
 * Writes into the staged `tree` the manifest pinned in `installRoot` when
 * it is the one this install would generate but for the tools (`expected`:
 * the generator's output with no tools, so the bin, version, name and risk
 * text all agree) and the tree with it holds exactly the pinned files with
 * the pinned bytes. Answers whether it did; otherwise the tree is left as it
 * was and the server is introspected as for a first install.
 */
export async function reuseRecordedManifest(installRoot: string, pin: PackageTreePin, tree: string, expected: Readonly<Record<string, unknown>>): Promise<boolean> {
  const pinned = await pinnedEntries(installRoot, pin);
  if (pinned.isErr()) return false;
  const entry = [...pinned.value].find((e) => e.startsWith(`f ${GENERATED_MANIFEST} `));
  if (entry === undefined) return false;
  const [, , size, sha256] = entry.split(' ');
  let bytes: Buffer;
  try {
    bytes = await readFile(join(installRoot, GENERATED_MANIFEST));
  } catch {
    return false;
  }
  // The bytes the install pinned, not whatever the install root holds now.
  if (String(bytes.length) !== size || createHash('sha256').update(bytes).digest('hex') !== sha256) return false;
  let recorded: unknown;
  try {
    recorded = JSON.parse(bytes.toString('utf8'));
  } catch {
    return false;
  }
  if (!isRecord(recorded) || withoutTools(recorded) !== withoutTools(expected)) return false;
  const target = join(tree, GENERATED_MANIFEST);
  try {
    await writeFile(target, bytes, { mode: 0o644, flag: 'wx' });
  } catch {
    return false;
  }
  if (await sameAsPinned(tree, pinned.value)) return true;
  await rm(target, { force: true });
  return false;
}
