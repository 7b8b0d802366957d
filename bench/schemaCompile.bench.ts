/**
 * What a plugin's worst schema costs the host's thread under the schema
 * bounds (etc/plugin-answers.json maxSchemaBytes, maxSchemaNodes,
 * maxSchemaPatterns, maxSchemaDepth; src/manifest/schemaLimits.ts): the
 * longest event-loop stall while a real plugin process
 * (test/shapes/mcp/fixtures/schema-lister.mjs) lists, through McpSession, an
 * output schema of each slow shape at the bounds (the slowest of the four
 * counts), beside the compile of the slowest shape R8's first bound admitted
 * (64 KiB, no count: a `oneOf` of small objects), with the host's Ajv
 * settings, in the same round. Ajv compiles on the thread every plugin and
 * the gateway share, so the stall is what every other call waits.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { MAX_SCHEMA_PATTERNS, measureSchema } from '../src/manifest/schemaLimits.js';
import { untrustedPatternEngine } from '../src/manifest/untrustedPatterns.js';
import { McpSession } from '../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../test/support/mcpLaunch.js';
import { pairedResult, roundRatioSpread, timeMs, type BenchResult } from './harness.js';
import { longestTimerGap } from './support/timerGap.js';

const LISTER = fileURLToPath(new URL('../test/shapes/mcp/fixtures/schema-lister.mjs', import.meta.url));
const ROUNDS = 5;
/** R8's first runtime bound, for the baseline shape. */
const OLD_BOUND_BYTES = 65_536;

/** Adds members made by `make` to the collection `wrap` makes of them while `fits` holds; the last that fits. */
function grow(make: (i: number) => [string, unknown], wrap: (members: Record<string, unknown>) => unknown, fits: (schema: unknown) => boolean): unknown {
  const members: Record<string, unknown> = {};
  for (let i = 0; ; i++) {
    const [key, value] = make(i);
    members[key] = value;
    if (!fits(wrap(members))) {
      delete members[key];
      return wrap(members);
    }
  }
}

const withinBounds = (schema: unknown): boolean => measureSchema(schema).ok;
const oneOf = (fits: (schema: unknown) => boolean): unknown =>
  grow((i) => [String(i), { type: 'object', properties: { k: { const: `v${i}` } }, required: ['k'] }], (m) => ({ oneOf: Object.values(m) }), fits);

/** The slowest shapes measured (docs/manifest.md 'Schema refs'), each grown to the bounds. */
function slowShapes(): Record<string, unknown> {
  const patternProperties: Record<string, unknown> = {};
  for (let i = 0; i < MAX_SCHEMA_PATTERNS; i++) patternProperties[`^x${i}(a|b)+[a-z]*$`] = { type: 'string' };
  return {
    strings: grow((i) => [`p${i}`, { type: 'string' }], (p) => ({ type: 'object', properties: p }), withinBounds),
    formats: grow((i) => [`p${i}`, { type: 'string', format: 'email' }], (p) => ({ type: 'object', properties: p }), withinBounds),
    patterns: grow((i) => [`p${i}`, { type: 'string' }], (p) => ({ type: 'object', patternProperties, properties: p }), withinBounds),
    oneOf: oneOf(withinBounds),
  };
}

/** The longest gap between 1 ms timers while a fresh plugin process lists `file`'s schema and the host compiles it. */
async function listingStall(file: string): Promise<number> {
  let session: McpSession | undefined;
  try {
    // The compile runs inside the list; the timer sees the gap only at its next turn (30 ms after).
    return await longestTimerGap(async () => {
      session = McpSession.create({ launch: launchCommand([process.execPath, LISTER, `--schema-file=${file}`]) })._unsafeUnwrap();
      const listed = await session.listTools();
      if (listed.isErr()) throw new Error(`the benchmark schema must be listed: ${listed.error.message}`);
      // Past a bound the host lists the tool without compiling its schema, and the stall measured would be no compile's.
      const unchecked = listed.value.find((tool) => tool.outputSchemaUnchecked !== undefined);
      if (unchecked !== undefined) throw new Error(`the benchmark schema must be compiled, not left unchecked (${unchecked.outputSchemaUnchecked})`);
    }, 30);
  } finally {
    await session?.close();
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mph-schema-bench-'));
  try {
    const shapes = Object.entries(slowShapes());
    const oldWorst = oneOf((schema) => JSON.stringify(schema).length <= OLD_BOUND_BYTES);
    const stalls: number[] = [];
    const baselines: number[] = [];
    for (let round = -1; round < ROUNDS; round++) {
      // Each round's schemas are new texts (a title), so the process-wide cache compiles them again.
      let worst = 0;
      for (const [name, schema] of shapes) {
        const file = join(dir, `${name}-${round}.json`);
        writeFileSync(file, JSON.stringify({ ...(schema as object), title: `${name} ${round}` }));
        worst = Math.max(worst, await listingStall(file));
      }
      const ajv = new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: true, code: { regExp: untrustedPatternEngine } });
      formats.default(ajv);
      const baseline = await timeMs(() => ajv.compile({ ...(oldWorst as object), title: `old ${round}` }));
      // Round -1 warms the host's code (Ajv's, the session's) on both sides.
      if (round < 0) continue;
      stalls.push(worst);
      baselines.push(baseline);
    }
    return [
      pairedResult(
        {
          name: 'host stall while a plugin lists its slowest output schema within the schema bounds',
          baselineName: `compile of the slowest schema R8's 64 KiB bound admitted (oneOf of ${(oldWorst as { oneOf: unknown[] }).oneOf.length} objects)`,
          unit: 'ms',
          compare: 'ratio',
          target: 0.35,
          better: 'lower',
          note: `${ROUNDS} rounds; each the longest stall of four shapes at the bounds (${shapes.map(([name]) => name).join(', ')}) listed by a real process; per-round ratios ${roundRatioSpread(stalls, baselines)}`,
        },
        stalls,
        baselines,
      ),
    ];
  } finally {
    await stopAllTestProcesses();
    rmSync(dir, { recursive: true, force: true });
  }
}
