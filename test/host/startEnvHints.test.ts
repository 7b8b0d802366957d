/**
 * Which failures the unset-env diagnosis applies to: a failed start (the
 * crash during initialize or the host's tools/list, a handshake launch), and
 * only when a granted name was missing; a crash while serving a call, or a
 * tool's own error, is left as it was.
 */
import { describe, expect, it } from 'vitest';
import { hostError } from '../../src/errors/HostError.js';
import { isUnsetEnvStart, unsetStartEnv, withUnsetEnvHint } from '../../src/host/startEnvHints.js';

describe('unsetStartEnv', () => {
  it('lists exact granted names and declared credentials the environment lacks, empty values too; never a prefix entry', () => {
    const env = { PATH: '/bin', SET_ONE: 'x', EMPTY_ONE: '', KEY: 'k' };
    expect(unsetStartEnv(['SET_ONE', 'EMPTY_ONE', 'MISSING', 'LC_*'], ['KEY', 'API_KEY'], env)).toEqual({ granted: ['EMPTY_ONE', 'MISSING'], credentials: ['API_KEY'] });
    expect(unsetStartEnv(['SET_ONE', 'LC_*'], ['KEY'], env)).toBeUndefined();
    // A name both granted and declared is a credential: `setup` can store it.
    expect(unsetStartEnv(['API_KEY'], ['API_KEY'], env)).toEqual({ granted: [], credentials: ['API_KEY'] });
  });
});

describe('withUnsetEnvHint', () => {
  const crashAt = (phase: string, tail = 'x\n') => hostError('PLUGIN_CRASHED', `plugin exited with status 1 during ${phase}`, { details: { phase, stderr_tail: tail } });

  it('names the unset names the output names, with their remedies, on a crash at start: a configuration problem', () => {
    const failed = crashAt('initialize', 'Error: AIRTABLE_API_KEY is required\nset A or B\n');
    const hinted = withUnsetEnvHint(failed, 'air', { granted: ['A', 'B', 'LOG_LEVEL'], credentials: ['AIRTABLE_API_KEY'] });
    expect(hinted.details).toMatchObject({ unset_env: ['AIRTABLE_API_KEY', 'A', 'B', 'LOG_LEVEL'], stderr_tail: failed.details.stderr_tail });
    expect(hinted.hint).toContain('AIRTABLE_API_KEY was not set in the environment the host started it from');
    expect(hinted.hint).toContain('`setup air --set AIRTABLE_API_KEY=-`');
    expect(hinted.hint).toContain('A, B were not set in the environment the host started it from');
    expect(hinted.hint).not.toContain('LOG_LEVEL');
    expect(hinted.hint.endsWith(failed.hint)).toBe(true);
    expect(isUnsetEnvStart(hinted)).toBe(true);
  });

  it('mentions unset names the output does not name conditionally, and counts the failure as a crash', () => {
    // API_KEY is not named by AIRTABLE_API_KEY: names are matched whole.
    const hinted = withUnsetEnvHint(crashAt('initialize', 'AIRTABLE_API_KEY: bad\n'), 'p', { granted: ['LOG_LEVEL', 'API_KEY'], credentials: [] });
    expect(hinted.details).toHaveProperty('unset_env', ['LOG_LEVEL', 'API_KEY']);
    expect(hinted.hint).toContain('LOG_LEVEL, API_KEY were not set in the environment the host started it from (granted to the plugin; its output does not name');
    expect(isUnsetEnvStart(hinted)).toBe(false);
  });

  it('applies to a handshake launch and the host tools/list at start, not to a crash during a call or a tool error', () => {
    const unset = { granted: ['TOKEN'], credentials: [] };
    const launch = hostError('PLUGIN_HANDSHAKE_FAILED', 'no line', { details: { phase: 'launch', stderr_tail: 'TOKEN?\n' } });
    expect(withUnsetEnvHint(launch, 'p', unset).details).toHaveProperty('unset_env', ['TOKEN']);
    expect(withUnsetEnvHint(crashAt('tools/list'), 'p', unset).details).toHaveProperty('unset_env', ['TOKEN']);
    const midCall = crashAt('tools/call', 'TOKEN is not set\n');
    expect(withUnsetEnvHint(midCall, 'p', unset)).toBe(midCall);
    const toolError = hostError('PLUGIN_TOOL_ERROR', 'TOKEN rejected', { details: { phase: 'initialize' } });
    expect(withUnsetEnvHint(toolError, 'p', unset)).toBe(toolError);
    expect(withUnsetEnvHint(crashAt('initialize'), 'p', undefined).details).not.toHaveProperty('unset_env');
    expect(isUnsetEnvStart(midCall)).toBe(false);
  });
});
