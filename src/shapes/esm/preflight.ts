import { err, ok, okAsync, ResultAsync, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { NormalizedManifest } from '../../manifest/model.js';
import { CaptureServer, type CapturedRegistration, type CapturedTool } from './CaptureServer.js';
import { importCreatePlugin, resolveEntry, type CreatePlugin, type ResolvedEntry } from './entry.js';
import { reconcileCapabilities, type CapabilityMismatch } from './reconcile.js';
import { validateTools, type EsmToolValidator, type InvalidTool } from './validateTools.js';

/** Default time `import` plus `createPlugin(server)` may take: 30 s. */
export const DEFAULT_CREATE_PLUGIN_TIMEOUT_MS = 30_000;

/** Milliseconds spent in each preflight phase, added to as phases run. */
export interface PhaseTimes {
  /** Manifest and tool validation. */
  validationMs: number;
  /** Importing the entry and running `createPlugin`. */
  importMs: number;
  /** Reconciling declared and registered capabilities. */
  reconcileMs: number;
  /** Replaying registrations onto the real server. */
  registerMs: number;
}

/** A fresh, zeroed {@link PhaseTimes}. */
export function zeroPhaseTimes(): PhaseTimes {
  return { validationMs: 0, importMs: 0, reconcileMs: 0, registerMs: 0 };
}

/** How one preflight runs. */
export interface PreflightSettings {
  /** A reconciliation mismatch fails the preflight (PLUGIN_CAPABILITY_MISMATCH). */
  readonly strictCapabilities: boolean;
  /** An invalid tool fails the preflight (PLUGIN_TOOL_INVALID) instead of being skipped. */
  readonly strictTools: boolean;
  /** Time allowed for import plus `createPlugin`. */
  readonly createTimeoutMs: number;
  /** Evaluate the entry again instead of using Node's module cache (hot reload). */
  readonly fresh: boolean;
  /** A monotonic clock in ms. */
  readonly now: () => number;
  /** The host's tool validator (ToolValidationManager), run on each tool after the loader's checks. */
  readonly validateTool?: EsmToolValidator;
}

/** What a passed preflight hands to registration. */
export interface PreflightOutcome {
  /** The validated manifest. */
  readonly manifest: NormalizedManifest;
  /** The entry, resolved inside the root. */
  readonly entry: ResolvedEntry;
  /** What to register, in the order the plugin registered it; invalid tools left out. */
  readonly registrations: readonly CapturedRegistration[];
  /** Declared-versus-registered differences (warnings, since the preflight passed). */
  readonly mismatches: readonly CapabilityMismatch[];
  /** Tools skipped as invalid. */
  readonly invalidTools: readonly InvalidTool[];
  /** Every warning as one line each: mismatches, then skipped tools. */
  readonly warnings: readonly string[];
}

function timed<T>(times: PhaseTimes, phase: keyof PhaseTimes, now: () => number, run: () => T): T {
  const start = now();
  try {
    return run();
  } finally {
    times[phase] += now() - start;
  }
}

async function runCreatePlugin(
  createPlugin: CreatePlugin,
  capture: CaptureServer,
  manifest: NormalizedManifest,
  timeoutMs: number,
): Promise<Result<void, HostError>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([Promise.resolve().then(() => createPlugin(capture)), timeout]);
    if (outcome === 'timeout') {
      return err(hostError('PLUGIN_TIMEOUT', `createPlugin(server) of ${manifest.plugin_id} did not finish within ${timeoutMs} ms`, { details: { plugin: manifest.plugin_id, timeout_ms: timeoutMs } }));
    }
    return ok(undefined);
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return err(hostError('PLUGIN_INTERNAL_ERROR', `createPlugin(server) of ${manifest.plugin_id} failed: ${message}`, { details: { plugin: manifest.plugin_id }, cause }));
  } finally {
    clearTimeout(timer);
    capture.seal();
  }
}

function gate(
  manifest: NormalizedManifest,
  entry: ResolvedEntry,
  captured: readonly CapturedRegistration[],
  settings: PreflightSettings,
  times: PhaseTimes,
): Result<PreflightOutcome, HostError> {
  const plugin = manifest.plugin_id;
  const mismatches = timed(times, 'reconcileMs', settings.now, () => reconcileCapabilities(manifest, captured));
  if (settings.strictCapabilities && mismatches.length > 0) {
    const first = mismatches[0]!.message;
    const more = mismatches.length > 1 ? ` (and ${mismatches.length - 1} more)` : '';
    return err(hostError('PLUGIN_CAPABILITY_MISMATCH', `${plugin}: ${first}${more}`, { details: { plugin, mismatches: mismatches.map((m) => ({ ...m })) } }));
  }
  const tools = captured.filter((r): r is CapturedTool => r.kind === 'tool');
  const hostValidator = settings.validateTool === undefined ? undefined : { plugin, validate: settings.validateTool };
  const { invalid } = timed(times, 'validationMs', settings.now, () => validateTools(tools, hostValidator));
  if (settings.strictTools && invalid.length > 0) {
    const first = invalid[0]!;
    return err(
      hostError('PLUGIN_TOOL_INVALID', `${plugin}: tool "${first.name}": ${first.problems.join('; ')}`, {
        details: { plugin, invalidTools: invalid.map((t) => ({ name: t.name, problems: [...t.problems] })) },
      }),
    );
  }
  const skipped = new Set(invalid.map((t) => t.name));
  return ok({
    manifest,
    entry,
    registrations: captured.filter((r) => r.kind !== 'tool' || !skipped.has(r.name)),
    mismatches,
    invalidTools: invalid,
    warnings: [
      ...mismatches.map((m) => m.message),
      ...invalid.map((t) => `tool "${t.name}" skipped as invalid: ${t.problems.join('; ')}`),
    ],
  });
}

/**
 * The preflight of one plugin whose manifest is valid: resolve the entry
 * inside the root (unless `resolved` is given), import it, run `createPlugin` against a
 * {@link CaptureServer}, reconcile capabilities, validate tools. Nothing
 * reaches a real server here; a failure at any step returns its HostError.
 */
export function preflightPlugin(
  manifest: NormalizedManifest,
  root: string,
  settings: PreflightSettings,
  times: PhaseTimes,
  resolved?: ResolvedEntry,
): ResultAsync<PreflightOutcome, HostError> {
  const entryName = manifest.entry;
  if (entryName === undefined) {
    return new ResultAsync(Promise.resolve(err(hostError('PLUGIN_ENTRY_INVALID', `${manifest.plugin_id}: the manifest names no entry`, { details: { root } }))));
  }
  const capture = new CaptureServer();
  const importStart = settings.now();
  const located = resolved === undefined ? resolveEntry(root, entryName) : okAsync<ResolvedEntry, HostError>(resolved);
  return located.andThen((entry) =>
    importCreatePlugin(entry, settings.fresh)
      .andThen((createPlugin) => new ResultAsync(runCreatePlugin(createPlugin, capture, manifest, settings.createTimeoutMs)))
      .map(() => {
        times.importMs += settings.now() - importStart;
        return entry;
      })
      .mapErr((error) => {
        times.importMs += settings.now() - importStart;
        return error;
      })
      .andThen((resolved) => gate(manifest, resolved, capture.registrations, settings, times)),
  );
}
