/**
 * Seals of the ESM runner's load reports. The plugin's code runs in the
 * runner's own process and can print the runner's report line and exit
 * with its status, so a report on stderr alone proves nothing. What the
 * runner reports before any plugin code runs (its arguments, the manifest,
 * the verified entry: PLUGIN_EXECUTABLE_UNTRUSTED, HOST_IO_ERROR, …) can be
 * proven: each start gets a fresh random seal on an inherited descriptor
 * (an unlinked file), which the runner reads only to seal such a report and
 * then exits, and otherwise closes unread before it imports the plugin. The
 * seal never enters the memory of a process that runs plugin code, and a
 * closed descriptor on an unlinked file cannot be opened again, so the plugin
 * has nothing to copy. The host believes a sealed report, and an unsealed
 * one only for the codes a plugin's own code may cause (see
 * `esmRunnerFailure`), which also takes the seals out of the stderr tails it
 * hands on, so that no caller (a plugin calling through the gateway among
 * them) learns a seal another report could carry.
 */
import { ResultAsync } from 'neverthrow';
import reportSettings from '../../../etc/esm-runner-reports.json' with { type: 'json' };
import { writeUnnamedFile } from '../../binding/verifiedCopy.js';
import type { HostError } from '../../errors/HostError.js';
import { systemRandom, type Random } from '../../ports/ports.js';

/** One start's seal: a descriptor the runner inherits. */
export interface RunnerReportSeal {
  /** A read-only descriptor on an unlinked file holding the seal. */
  readonly fd: number;
  /** Closes the host's descriptor; call once the runner has been spawned (or spawning failed). */
  release(): void;
}

/**
 * Seals issued by this host process, oldest first. A module-level set,
 * because the report comes back inside a PLUGIN_CRASHED that knows nothing
 * of its start (and may be mapped more than once: every caller waiting on
 * the start gets it, so a seal is not spent by reading it); seals are 128
 * random bits, so one process's seals never name another's starts.
 */
const liveSeals = new Set<string>();

function remember(seal: string): void {
  liveSeals.add(seal);
  // Most starts never report (their runner loads the plugin): drop the oldest, so the set stays bounded.
  for (const old of liveSeals) {
    if (liveSeals.size <= reportSettings.maxLiveSeals) break;
    liveSeals.delete(old);
  }
}

/**
 * Issues a fresh seal for one start of the runner: written to an unnamed
 * file in `copyDir` (the host's private folder for verified copies, which
 * must exist: `verifyModuleEntry` prepares it) and remembered.
 */
export function issueRunnerReportSeal(copyDir: string, random: Random = systemRandom): ResultAsync<RunnerReportSeal, HostError> {
  const seal = Buffer.from(random.bytes(reportSettings.sealBytes)).toString('hex');
  return new ResultAsync(writeUnnamedFile(copyDir, random, seal)).map((handle) => {
    remember(seal);
    let released = false;
    return {
      fd: handle.fd,
      release(): void {
        if (released) return;
        released = true;
        void handle.close().catch(() => undefined);
      },
    };
  });
}

/** Whether `seal` is one this host process issued (among the last `maxLiveSeals`). */
export function isIssuedRunnerReportSeal(seal: unknown): boolean {
  return typeof seal === 'string' && liveSeals.has(seal);
}

/** `text` with every seal a report line carries replaced, for tails handed on to callers, events and logs. */
export function withoutReportSeals(text: string): string {
  return text.replace(/"seal":"[^"]*"/g, '"seal":"(checked)"');
}
