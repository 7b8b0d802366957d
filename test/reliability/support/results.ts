/**
 * Where the reliability suites leave their measurements for
 * scripts/reliability-report.ts: one JSON file per suite under
 * temp/reliability/ (gitignored), rewritten after every scenario so a run
 * that dies half way still reports what it saw.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder the results go to; `RELIABILITY_RESULTS_DIR` overrides it. */
export const RESULTS_DIR = process.env.RELIABILITY_RESULTS_DIR ?? fileURLToPath(new URL('../../../temp/reliability/', import.meta.url));

/** One scenario's record. */
export interface ScenarioRecord {
  readonly id: string;
  readonly protocol: string;
  readonly fault: string;
  /** The contract's outcome, e.g. `PLUGIN_CRASHED; next call: quarantined, then respawned and answered`. */
  readonly expected: string;
  /** What happened, in the same words. */
  readonly observed: string;
  readonly passed: boolean;
  /** Highest host RSS during the scenario, in MiB. */
  readonly peak_rss_mb: number;
  /** Peak minus the RSS when the scenario started, in MiB. */
  readonly rss_growth_mb: number;
  /** From the faulty call to its outcome (for lifecycle faults: the host's close), in ms. */
  readonly detect_ms: number;
  /** How long `PluginHost.close()` took, in ms. */
  readonly close_ms: number;
  /** Every check that failed; empty when passed. */
  readonly problems: readonly string[];
}

/** The load test's record. */
export interface LoadRecord {
  readonly installed: number;
  readonly running: number;
  readonly calls: number;
  readonly faulty_calls: number;
  /** Calls to the running plugins that never get a fault. */
  readonly unfaulted_plugin_calls: number;
  /** Their failures by code: the test requires none. */
  readonly unfaulted_plugin_failures: Readonly<Record<string, number>>;
  readonly answered_ok: number;
  readonly stable_errors: Readonly<Record<string, number>>;
  readonly lost: number;
  readonly duplicated: number;
  readonly over_deadline: number;
  readonly peak_rss_mb: number;
  readonly rss_growth_mb: number;
  readonly orphans: number;
  readonly wall_ms: number;
  readonly passed: boolean;
  readonly problems: readonly string[];
}

/** The gateway load test's record (test/gateway/loadGateway.test.ts). */
export interface GatewayLoadRecord {
  readonly clients: number;
  readonly calls_per_client: number;
  readonly calls: number;
  /** Calls answered with a result (their own or another's). */
  readonly answered: number;
  /** Calls that never settled. */
  readonly lost: number;
  /** Calls that failed (rejected by the client). */
  readonly failed: number;
  /** Answers that carried another call's message. */
  readonly mixed_up: number;
  /** Heap after a full collection, before and after the counted calls, in MiB. */
  readonly heap_before_mb: number;
  readonly heap_after_mb: number;
  readonly heap_growth_limit_mb: number;
  /** Native memory V8 accounts for (`external`) after a full collection, before, at half and after the counted calls, in MiB. */
  readonly external_before_mb: number;
  readonly external_half_mb: number;
  readonly external_after_mb: number;
  readonly external_growth_limit_mb: number;
  /** RSS before the counted calls, after half of them and after all, in MiB; the ceiling applies to the last. */
  readonly rss_before_mb: number;
  readonly rss_half_mb: number;
  readonly rss_after_mb: number;
  readonly rss_ceiling_mb: number;
  readonly wall_ms: number;
  readonly passed: boolean;
  readonly problems: readonly string[];
}

/** What one suite file holds. */
export interface SuiteResults {
  readonly suite: string;
  readonly finished_at: string;
  readonly scenarios: readonly ScenarioRecord[];
  readonly load?: LoadRecord;
  readonly gateway_load?: GatewayLoadRecord;
}

/** Collects one suite's records and rewrites its file after each. */
export class ResultsFile {
  private readonly scenarios: ScenarioRecord[] = [];
  private load: LoadRecord | undefined;
  private gatewayLoad: GatewayLoadRecord | undefined;

  constructor(private readonly suite: string) {}

  /** Adds a scenario record. */
  record(record: ScenarioRecord): void {
    this.scenarios.push(record);
    this.write();
  }

  /** Sets the load test record. */
  recordLoad(record: LoadRecord): void {
    this.load = record;
    this.write();
  }

  /** Sets the gateway load test record. */
  recordGatewayLoad(record: GatewayLoadRecord): void {
    this.gatewayLoad = record;
    this.write();
  }

  private write(): void {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const body: SuiteResults = {
      suite: this.suite,
      finished_at: new Date().toISOString(),
      scenarios: this.scenarios,
      ...(this.load === undefined ? {} : { load: this.load }),
      ...(this.gatewayLoad === undefined ? {} : { gateway_load: this.gatewayLoad }),
    };
    writeFileSync(join(RESULTS_DIR, `${this.suite}.json`), `${JSON.stringify(body, null, 2)}\n`);
  }
}

/** Every suite file in `dir`. */
export function readResults(dir: string = RESULTS_DIR): SuiteResults[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort();
  } catch {
    return [];
  }
  return names.map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')) as SuiteResults);
}
