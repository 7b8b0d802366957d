/**
 * One read of a file a package ships, for the bounded-read test to measure:
 *
 *   node boundedReadChild.mjs bundle-manifest|npm-manifest|pyproject <dir>
 *
 * calls the reader on `<dir>` (which holds the large file) and prints one
 * JSON line: how far the process's peak RSS rose during the read (MiB) and
 * what the reader returned.
 */
import { readBundleManifest } from '../../../src/bundle/bundleManifest.js';
import { DEFAULT_CAPABILITIES } from '../../../src/installer/grant.js';
import { shippedManifest } from '../../../src/installer/openNpmSource.js';
import { consoleScriptOf } from '../../../src/installer/pythonVenv.js';

const [reader, dir] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: bundle-manifest|npm-manifest|pyproject <dir>');

const peakMiB = (): number => process.resourceUsage().maxRSS / 1024;
const before = peakMiB();
let outcome: unknown;
if (reader === 'bundle-manifest') {
  const read = await readBundleManifest(dir, { defaultCapabilities: DEFAULT_CAPABILITIES, dataDirOf: (id) => `/nonexistent/${id}`, searchPath: '' });
  outcome = read.isOk() ? { ok: read.value ?? null } : { error: read.error.code };
} else if (reader === 'npm-manifest') {
  outcome = { ok: (await shippedManifest(dir)) ?? null };
} else if (reader === 'pyproject') {
  const read = await consoleScriptOf(dir, 'server');
  outcome = read.isOk() ? { ok: read.value ?? null } : { error: read.error.code, reason: (read.error.details as { reason?: unknown } | undefined)?.reason };
} else {
  throw new Error(`unknown reader ${String(reader)}`);
}
process.stdout.write(`${JSON.stringify({ grownMiB: Math.round(peakMiB() - before), outcome })}\n`);
