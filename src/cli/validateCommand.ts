import { readFile, stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { inspectManifestFile } from '../installer/manifestHostChecks.js';
import type { CommandContext } from './context.js';
import { exitCodeFor, type ExitCode } from './exitCodes.js';
import { usageFailure } from './usage.js';
import { printed, printValidation } from './validateReport.js';

const MANIFEST_EXTENSIONS = new Set(['.json', '.toml']);

/** What every lone-manifest validation checks (the package checks need the package). */
const MANIFEST_CHECKS = ['manifest', 'namespace', 'env', 'credentials', 'schema refs'];

/**
 * `validate`. A lone manifest is checked here with the library's manifest and
 * host-policy checks only, so the command starts in a fraction of the time the
 * whole library takes to load; a package (or an MCP Bundle's manifest, which
 * only the installer reads) goes to {@link validatePackage}, imported then.
 */
export async function validateCommand(ctx: CommandContext): Promise<ExitCode> {
  const given = ctx.positionals[0] ?? '';
  let isDirectory: boolean;
  let bytes: number;
  try {
    const found = await stat(given);
    isDirectory = found.isDirectory();
    bytes = found.size;
  } catch {
    return usageFailure(ctx, `no such file or directory: ${given}`, 'validate');
  }
  const manifestOnly = !isDirectory && MANIFEST_EXTENSIONS.has(extname(given).toLowerCase());
  if (!manifestOnly || (await isBundleManifest(given))) {
    const { validatePackage } = await import('./validatePackage.js');
    return validatePackage(ctx, given, { isDirectory, manifestOnly });
  }
  const inspected = await inspectManifestFile(given, {
    preset: ctx.flags.preset ?? 'neutral',
    devAllowNamespaceConflict: ctx.flags.devAllowNamespaceConflict,
  });
  if (inspected.isErr()) {
    ctx.out.failure(inspected.error, undefined, { source: given });
    return exitCodeFor(inspected.error, true);
  }
  const report = inspected.value;
  return printValidation(
    ctx,
    given,
    report,
    { kind: 'manifest', manifestFile: basename(given), entries: 1, bytes, digest: undefined, manifestPath: given },
    { violations: report.violations.map(printed), checked: [...MANIFEST_CHECKS], canary: undefined, skipped: [] },
  );
}

/** Whether a JSON file is an MCP Bundle's manifest (`manifest_version` or `dxt_version`). */
async function isBundleManifest(path: string): Promise<boolean> {
  if (extname(path).toLowerCase() !== '.json') return false;
  try {
    const doc = JSON.parse(await readFile(path, 'utf8')) as unknown;
    if (typeof doc !== 'object' || doc === null) return false;
    const fields = doc as Record<string, unknown>;
    return typeof fields.manifest_version === 'string' || typeof fields.dxt_version === 'string';
  } catch {
    // Unparsable JSON is reported by the manifest checks, with its line and column.
    return false;
  }
}
