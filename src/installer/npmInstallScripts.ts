/**
 * The install scripts npm skipped. npm runs with `--ignore-scripts`, so a
 * package that builds a native addon (`node-gyp rebuild`, `prebuild-install`)
 * or downloads a file at install (a browser, a platform binary) is laid out
 * without it; its server then fails at start or at its first call. npm
 * records such packages in its lockfile (`hasInstallScript`), which is where
 * the host learns their names, to tell the person why.
 */
import { hostError, type HostError } from '../errors/HostError.js';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The names of the packages of an npm lockfile (v2/v3 `packages`) that have
 * install scripts, in lockfile order, each once.
 */
export function packagesWithInstallScripts(lock: Readonly<Record<string, unknown>> | undefined): string[] {
  const packages = isRecord(lock?.['packages']) ? lock['packages'] : {};
  const names = new Set<string>();
  for (const [path, entry] of Object.entries(packages)) {
    if (path === '' || !isRecord(entry) || entry['hasInstallScript'] !== true) continue;
    const nested = path.lastIndexOf('node_modules/');
    // A path outside node_modules (a workspace link) is the package's own folder: its name is the path.
    names.add(nested === -1 ? path : path.slice(nested + 'node_modules/'.length));
  }
  return [...names];
}

/** The sentence that says which install scripts never ran and what that can break. */
export function skippedInstallScriptsNote(names: readonly string[]): string {
  return `Packages of its tree have install scripts, which never run here: ${names.join(', ')}. A native addon they build or a file they download at install (a browser, a platform binary) may be missing.`;
}

/**
 * A failed start of a server whose tree has packages with install scripts:
 * the same error, with `details.skipped_install_scripts` and its hint
 * followed by their names. Only a possible cause: many such scripts merely
 * check or tidy (esbuild's), so the server's own words decide.
 */
export function withSkippedInstallScripts(error: HostError, names: readonly string[]): HostError {
  if (names.length === 0) return error;
  return hostError(error.code, error.message, {
    details: { ...error.details, skipped_install_scripts: [...names] },
    retryable: error.retryable,
    cause: error,
    hint: `${error.hint} ${skippedInstallScriptsNote(names)} When the server's error names a missing file of one of them, that is why: install a version that ships it prebuilt, or another server.`,
  });
}
