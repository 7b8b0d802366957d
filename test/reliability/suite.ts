/**
 * The body shared by the per-protocol reliability test files: bundle the
 * packages once, run every scenario of the protocol as its own test, record
 * each result for the report whether it passed or not.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultPackages, type FaultProtocol } from '../support/faultPackages.js';
import { ResultsFile } from './support/results.js';
import { expectedText, runScenario, type ScenarioPackages } from './support/runScenario.js';
import { scenariosOf } from './scenarios.js';

/** Declares one test per scenario of `protocol`. */
export function faultSuite(protocol: FaultProtocol): void {
  const results = new ResultsFile(`faults-${protocol}`);
  let packages: FaultPackages;
  let installable: ScenarioPackages;

  beforeAll(async () => {
    packages = await FaultPackages.build(protocol === 'ndjson-rpc' ? [protocol] : [protocol, 'ndjson-rpc']);
    installable = {
      faulty: await packages.package(protocol, { pluginId: 'faulty', faulty: true }),
      healthy: await packages.package('ndjson-rpc', { pluginId: 'healthy', faulty: false }),
    };
  }, 120_000);
  afterAll(async () => packages?.dispose());

  for (const scenario of scenariosOf(protocol)) {
    it(`${scenario.fault}: ${expectedText(scenario)}`, { timeout: scenario.timeoutMs * 2 + 120_000 }, async () => {
      let record;
      try {
        record = await runScenario(scenario, installable);
      } catch (error) {
        record = {
          id: scenario.id,
          protocol,
          fault: scenario.fault,
          expected: expectedText(scenario),
          observed: `the scenario could not run: ${error instanceof Error ? error.message : String(error)}`,
          passed: false,
          peak_rss_mb: 0,
          rss_growth_mb: 0,
          detect_ms: 0,
          close_ms: 0,
          problems: ['the scenario could not run'],
        };
      }
      results.record(record);
      expect(record.problems).toEqual([]);
    });
  }
}
