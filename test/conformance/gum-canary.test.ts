/**
 * Seed 001 (GUM plugin contract) §Canaries and seed 000 §7: the canary CLI
 * as the contract writes it, `canary --plugin=<name> --live
 * --canary-args='key=value ...'`, run for real against the author guide's
 * Flight Search example, a hand-written MCP server that echoes whatever
 * arguments it is sent.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { parseInvocation } from '../../src/cli/args.js';
import { cli, json, REPO, tempDir } from '../cli/cliHarness.js';

const SLOW = 60_000;
const DAY = 86_400_000;
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

describe("seed 001 §Canaries: --canary-args='key=value ...' and --plugin=<name> as the contract writes them", () => {
  it("--canary-args='origin=JFK depart_date=+2w' is one argument holding several pairs", () => {
    const parsed = parseInvocation(['canary', '--plugin=fli', '--live', "--canary-args=origin=JFK depart_date=+2w"]);
    expect(parsed).toMatchObject({ ok: true, value: { command: 'canary', positionals: ['fli'], flags: { live: true, canaryArgs: { origin: 'JFK', depart_date: '+2w' } } } });
    // --plugin=<name> and a positional name that disagree are a usage error.
    expect(parseInvocation(['canary', 'fli', '--plugin=other'])).toMatchObject({ ok: false, problem: { message: expect.stringContaining('name different plugins') } });
  });

  it('--canary-args: quotes group a value with spaces; an unclosed quote is a usage error', () => {
    expect(parseInvocation(['canary', 'fli', '--canary-args', `city="New York" limit=3`])).toMatchObject({ ok: true, value: { flags: { canaryArgs: { city: 'New York', limit: 3 } } } });
    expect(parseInvocation(['canary', 'fli', '--canary-args', `city="New York`])).toMatchObject({ ok: false, problem: { command: 'canary' } });
  });
});

describe('seed 001 §Canaries through the CLI, against the author guide example (seed 000 §3)', () => {
  let profile: { readonly path: string; dispose(): Promise<void> };
  let pkg: string;
  const inProfile = (args: readonly string[]) => cli([...args, '--profile-dir', profile.path, '--dev']);

  beforeAll(async () => {
    profile = await tempDir('gum-canary-');
    pkg = await packageFixturePlugin(join(REPO, 'fixtures/plugins/gum-fli'));
    const installed = await inProfile(['install', pkg, '--json']);
    expect(installed.code, installed.stderr).toBe(0);
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(pkg, { recursive: true, force: true });
  });

  it("canary --plugin=fli --live --canary-args='origin=JFK depart_date=+2w' reaches the plugin as separate, resolved arguments", { timeout: SLOW }, async () => {
    const before = Date.now();
    const run = await inProfile(['canary', '--plugin=fli', '--live', '--canary-args=origin=JFK depart_date=+2w', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = json(run) as { canary: { status: string }; result: { content: { text: string }[] } };
    expect(out.canary.status).toBe('passed');
    const received = (JSON.parse(out.result.content[0]?.text ?? '{}') as { data: { received: Record<string, string> } }).data.received;
    // The declared destination stays; origin and depart_date are overridden, the date resolved two weeks ahead.
    expect(received.origin).toBe('JFK');
    expect(received.destination).toBe('JFK');
    expect([isoDay(before + 14 * DAY), isoDay(Date.now() + 14 * DAY)]).toContain(received.depart_date);
  });

  it('a canary whose arguments do not validate against the tool input schema fails, though the plugin would answer', { timeout: SLOW }, async () => {
    const run = await inProfile(['canary', '--plugin=fli', '--live', "--canary-args=origin=JFKX", '--json']);
    expect(run.code).toBe(1);
    expect(json(run)).toMatchObject({ ok: false, canary: { status: 'failed', error: { code: 'INVALID_ARGS', details: { pointer: '/origin' } } } });
  });
});
