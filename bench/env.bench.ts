/**
 * EnvDenylist overhead per plugin spawn: building and scrubbing a plugin's
 * environment must be noise next to the spawn it prepares. The baseline is
 * the cheapest real spawn (`/bin/true`), measured in the same run.
 */
import { spawnSync } from 'node:child_process';
import { EnvDenylist } from '../src/env/EnvDenylist.js';
import { repeat, result, timeMs, type BenchResult } from './harness.js';

const RUNS = 15;
const BUILDS_PER_RUN = 2000;
const SPAWNS_PER_RUN = 5;

/** A parent environment as large as a busy developer shell's, with secrets in it. */
function busyParentEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (let i = 0; i < 150; i++) env[`TOOL_${i}_SETTING`] = `value-${i}`;
  Object.assign(env, { OPENAI_API_KEY: 'sk', GUM_PROFILE: 'work', LD_PRELOAD: '/x.so', LC_ALL: 'C.UTF-8', FLI_USER_AGENT: 'fli/1' });
  return env;
}

/** Runs the benchmark. */
export async function run(): Promise<BenchResult[]> {
  const denylist = new EnvDenylist({ extraPrefixes: ['MYAPP_'] });
  const parentEnv = busyParentEnv();
  const input = {
    parentEnv,
    envAllow: ['FLI_USER_AGENT', 'OPENAI_API_KEY'],
    credentials: { FLI_TOKEN: 'tok' },
    fixed: { FLI_DATA_DIR: '/data/fli' },
  };
  const buildMs = await repeat(RUNS, async () => (await timeMs(() => {
    for (let i = 0; i < BUILDS_PER_RUN; i++) denylist.buildEnv(input);
  })) / BUILDS_PER_RUN);
  const spawnMs = await repeat(RUNS, async () => (await timeMs(() => {
    for (let i = 0; i < SPAWNS_PER_RUN; i++) spawnSync('/bin/true', { env: { PATH: '/usr/bin:/bin' } });
  })) / SPAWNS_PER_RUN);
  return [
    result(
      {
        name: 'buildEnv cost per spawn',
        baselineName: 'spawn /bin/true',
        unit: 'ms',
        compare: 'ratio',
        target: 0.01,
        better: 'lower',
        note: `buildEnv over a ${Object.keys(parentEnv).length}-variable parent environment; target: under 1% of the cheapest spawn (${RUNS} runs of ${BUILDS_PER_RUN} builds and ${SPAWNS_PER_RUN} spawns).`,
      },
      buildMs,
      spawnMs,
    ),
  ];
}
