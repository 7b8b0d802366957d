import { constants } from 'node:os';
import { HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import type { ExitInfo, PluginProcess, ResourceLimitHit } from './PluginProcess.js';

/** What the host knows about an exit beyond the raw code and signal. */
export interface ExitContext {
  /** Whether the host itself sent SIGKILL (stop sequence), so 137 is not an out-of-memory kill. */
  readonly hostSentKill: boolean;
  /** Whether that SIGKILL came while the sandbox was still being set up, so no code of the plugin had run. */
  readonly killedInSetup?: boolean;
  /**
   * Whether a sandbox launcher sat between the host and the plugin. Launchers
   * report a plugin killed by signal N as exit status 128 + N.
   */
  readonly viaLauncher: boolean;
  /** Why the launcher could not execute the plugin, when it said so. */
  readonly execFailure?: string;
}

const SIGKILL_STATUS = 128 + constants.signals.SIGKILL;

function signalName(signo: number): string | undefined {
  return (Object.keys(constants.signals) as (keyof typeof constants.signals)[]).find((name) => constants.signals[name] === signo);
}

function killNote(status: number, context: ExitContext): string {
  if (status !== SIGKILL_STATUS) return '';
  if (context.killedInSetup === true) return ', sent by the host: stopped while its sandbox was set up, before the plugin ran';
  return context.hostSentKill ? ', sent by the host after the stop grace period' : ', likely out of memory';
}

/** Builds the {@link ExitInfo} of a finished plugin process. */
export function exitInfoOf(code: number | null, signal: NodeJS.Signals | null, context: ExitContext): ExitInfo {
  const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
  let description: string;
  if (context.execFailure !== undefined) {
    description = `could not execute the plugin: ${context.execFailure} (status ${status})`;
  } else if (signal !== null) {
    description = `killed by ${signal} (${status}${killNote(status, context)})`;
  } else {
    const inner = context.viaLauncher && status > 128 ? signalName(status - 128) : undefined;
    description =
      inner === undefined
        ? `exited with status ${status}`
        : `exited with status ${status}: killed by ${inner} inside the sandbox${killNote(status, context)}`;
  }
  return { code, signal, status, description };
}

/** "memory limit (268435456 bytes, cgroup-v1)": the cap a limit hit names. */
export function describeLimitHit(hit: ResourceLimitHit): string {
  return hit.limit === 'memory' ? `memory limit (${hit.value} bytes, ${hit.mechanism})` : `process limit (${hit.value} tasks, ${hit.mechanism})`;
}

/** The exit of a plugin the host stopped because its tree reached `hit`. */
export function withLimitHit(exit: ExitInfo, hit: ResourceLimitHit): ExitInfo {
  // Whoever delivered the final signal (the kernel's OOM killer or the host), the cause is the cap, not the signal.
  return { ...exit, limit: hit, description: `stopped: the plugin's process tree reached its ${describeLimitHit(hit)} (status ${exit.status})` };
}

/**
 * A crash of a plugin whose tree reached a cap (named by its exit, or by the
 * process when the exit is not known yet) becomes PLUGIN_RESOURCE_LIMIT,
 * with the crash's details (stderr tail, exit) and which cap was reached;
 * any other error comes back unchanged.
 */
export function crashOrLimit(crash: HostError, process: PluginProcess, exit: ExitInfo | undefined = process.exitInfo): HostError {
  const hit = exit?.limit ?? process.limitHit?.();
  if (hit === undefined || crash.code !== 'PLUGIN_CRASHED') return crash;
  return new HostError('PLUGIN_RESOURCE_LIMIT', `the plugin's process tree reached its ${describeLimitHit(hit)} and was stopped`, {
    details: { ...crash.details, limit: hit.limit, limit_value: hit.value, mechanism: hit.mechanism },
    cause: crash,
  });
}

/**
 * The one wait for a plugin's exit every protocol uses (crash reports, the
 * handshake teardown): resolves with the exit, or `undefined` when the process
 * has not exited within `waitMs` on `clock`.
 */
export function exitWithin(process: PluginProcess, waitMs: number, clock: Clock): Promise<ExitInfo | undefined> {
  if (process.exitInfo !== undefined) return Promise.resolve(process.exitInfo);
  return new Promise((resolve) => {
    const cancel = clock.setTimer(() => resolve(undefined), waitMs);
    void process.exited.then((info) => {
      cancel();
      resolve(info);
    });
  });
}
