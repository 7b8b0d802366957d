/**
 * Attack review: a high_stakes_write call's arguments are checked before its
 * confirmation is asked. Arguments the tool's request schema refuses, or
 * nested deeper than the host writes to a plugin, are INVALID_ARGS and the
 * confirmation callback never sees them (the user is not asked to approve a
 * call that cannot run, and a gateway does not render over-deep arguments
 * into its elicitation). Real host, real sandboxed probe plugin.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { addSchemaRef, packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { ConfirmationRequest } from '../../src/host/PluginHost.js';
import { FIXTURES, HostPool, jsonOf, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
const built: string[] = [];
afterEach(() => pool.cleanup());
afterAll(async () => {
  await removePackages();
  await Promise.all(built.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const op = 'plug.host-probe.write_note';

/** The probe fixture with a request schema on its high_stakes_write tool write_note: `note` must be a string. */
async function probeWithNoteSchema(): Promise<string> {
  const fixture = FIXTURES.probe;
  const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins', fixture.dir), { bundle: fixture.bundle });
  built.push(dir);
  await addSchemaRef(dir, 'write_note', 'host-probe.write_note', {
    request: { type: 'object', required: ['note'], properties: { note: { type: 'string' } } },
    response: { type: 'object' },
  });
  return dir;
}

describe('a high_stakes_write call', () => {
  it('checks its arguments before asking for confirmation: refused arguments are INVALID_ARGS and never reach the callback', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    (await installer.install(await probeWithNoteSchema(), { canary: false }))._unsafeUnwrap();
    await installer.close();
    const asked: ConfirmationRequest[] = [];
    const host = await pool.open(profile, {
      // Approves only the one call whose arguments pass, so an ask that came first would show as PLUGIN_CONFIRMATION_DENIED.
      confirm: (request) => {
        asked.push(request);
        return (request.args as { note?: unknown }).note === 'fine';
      },
    });

    const broken = (await host.call(op, { note: 42 }, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(broken).toMatchObject({ code: 'INVALID_ARGS', details: { pointer: '/note', plugin_id: 'host-probe', op_id: op } });

    const depth = pluginAnswerLimits.maxArgumentNestingDepth + 10;
    const deep = JSON.parse(`{"note":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`) as Record<string, unknown>;
    const tooDeep = (await host.call(op, deep, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(tooDeep).toMatchObject({ code: 'INVALID_ARGS', details: { max_nesting_depth: pluginAnswerLimits.maxArgumentNestingDepth, op_id: op } });
    expect(asked.map((request) => request.op_id)).toEqual([]);

    // Arguments that pass are still confirmed before the plugin runs.
    expect(jsonOf((await host.call(op, { note: 'fine' }, { maxRisk: 'write' }))._unsafeUnwrap())).toMatchObject({ data: { written: 'fine' } });
    expect(asked).toEqual([{ op_id: op, plugin_id: 'host-probe', risk_class: 'write', args: { note: 'fine' } }]);
  });

  it('runs the arguments that were approved: neither the caller nor the callback can change them while the question is open', async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    (await installer.install(await probeWithNoteSchema(), { canary: false }))._unsafeUnwrap();
    await installer.close();
    let release = (): void => undefined;
    const asked = new Promise<void>((resolve) => (release = resolve));
    const host = await pool.open(profile, {
      confirm: async (request) => {
        release();
        await new Promise((resolve) => setTimeout(resolve, 50));
        return (request.args as { note?: unknown }).note === 'fine';
      },
    });

    const args: Record<string, unknown> = { note: 'fine' };
    const calling = host.call(op, args, { maxRisk: 'write' });
    await asked;
    args.note = 'changed by the caller after the question was asked';
    expect(jsonOf((await calling)._unsafeUnwrap())).toMatchObject({ data: { written: 'fine' } });

    const rewriting = await pool.open(profile, {
      confirm: (request) => {
        (request.args as { note: string }).note = 'changed by the callback';
        return true;
      },
    });
    const refused = (await rewriting.call(op, { note: 'fine' }, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_CONFIRMATION_DENIED');
  });
});
