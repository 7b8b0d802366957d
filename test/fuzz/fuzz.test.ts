/**
 * The fuzz suite: every parser and validator under fast-check, through the
 * one harness. The last test fails when the run executed fewer cases than
 * the CI minimum, so the budget cannot shrink unnoticed. See docs/fuzzing.md.
 */
import { describe, expect, it } from 'vitest';
import { CI_MINIMUM_CASES, DEFAULT_FUZZ_RUNS, FUZZ_RUNS, formatTallies, runsFor, targetTallies } from './harness.js';
import { catalogTargets } from './targets/catalog.js';
import { envTargets } from './targets/env.js';
import { errorMapperTargets } from './targets/errorMapper.js';
import { installerTargets } from './targets/installer.js';
import { manifestTargets } from './targets/manifest.js';
import { protocolTargets } from './targets/protocols.js';

manifestTargets();
errorMapperTargets();
protocolTargets();
installerTargets();
envTargets();
catalogTargets();

describe('fuzz budget', () => {
  it(`the default run plans at least ${CI_MINIMUM_CASES} cases`, () => {
    const planned = targetTallies().reduce((sum, t) => sum + Math.max(1, Math.round(DEFAULT_FUZZ_RUNS * t.weight)), 0);
    expect(planned).toBeGreaterThanOrEqual(CI_MINIMUM_CASES);
  });

  it(`this run executed every planned case, at least ${CI_MINIMUM_CASES} in total`, () => {
    const tallies = targetTallies();
    console.log(`fuzz: FUZZ_RUNS=${FUZZ_RUNS}\n${formatTallies(tallies)}`);
    for (const t of tallies) expect(t.executed, t.name).toBe(runsFor(t.weight));
    expect(tallies.reduce((sum, t) => sum + t.executed, 0)).toBeGreaterThanOrEqual(CI_MINIMUM_CASES);
  });
});
