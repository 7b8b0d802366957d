/**
 * One complete, frozen config from the host's options, one budget per call,
 * one rule per kind of number (shared with the sandbox and the CLI), and the
 * did-you-mean that names the closest valid option.
 */
import { describe, expect, it } from 'vitest';
import { callBudget, pluginRunSettings, resolveHostConfig } from '../../src/host/hostConfig.js';
import { closestName } from '../../src/options/closestName.js';
import { numberProblem } from '../../src/options/optionRules.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';

describe('the resolved HostConfig', () => {
  it('is frozen and fills every default, the same for each shape it applies to', () => {
    const config = resolveHostConfig({ profileDir: '/tmp/p' })._unsafeUnwrap();
    expect(Object.isFrozen(config)).toBe(true);
    expect(config).toMatchObject({
      appName: 'mcp-plugin-host',
      profile: 'default',
      profileKind: 'standard',
      preset: 'neutral',
      callTimeoutMs: 30_000,
      maxTotalTimeoutMs: 300_000,
      idleTimeoutMs: 300_000,
      drainTimeoutMs: 30_000,
      activation: 'next-open',
      requireSignatures: false,
      maxInFlight: { 'mcp-plugin': 16, 'esm-module': 16, 'ndjson-rpc': 1 },
      backoffScheduleMs: [30_000, 60_000, 120_000, 240_000, 480_000],
      sandbox: { profileKind: 'standard' },
    });
    const set = resolveHostConfig({ profileDir: '/tmp/p', maxInFlight: 3, callTimeoutMs: 7_000 })._unsafeUnwrap();
    expect(set.maxInFlight).toEqual({ 'mcp-plugin': 3, 'esm-module': 3, 'ndjson-rpc': 3 });
    expect(set.drainTimeoutMs).toBe(7_000);
  });

  it('gives every call a complete budget: its own timeout and cap, else the host\'s', () => {
    const config = resolveHostConfig({ profileDir: '/tmp/p', callTimeoutMs: 5_000, maxTotalTimeoutMs: 9_000 })._unsafeUnwrap();
    expect(callBudget(config, {})).toEqual({ timeoutMs: 5_000, maxTotalTimeoutMs: 9_000 });
    expect(callBudget(config, { maxRisk: 'write' })).toBe(callBudget(config, {}));
    const signal = new AbortController().signal;
    expect(callBudget(config, { timeoutMs: 100, signal })).toEqual({ timeoutMs: 100, maxTotalTimeoutMs: 9_000, signal });
    const presence = { sent: () => undefined, settled: () => undefined };
    const onProgress = (): void => undefined;
    expect(callBudget(config, { signal, onProgress, presence, caller: { id: 'ann', transport: 'http', session: 's1' } })).toEqual({
      timeoutMs: 5_000,
      maxTotalTimeoutMs: 9_000,
      signal,
      onProgress,
      presence,
      caller: '["http","ann"]',
    });
  });

  it('keys a caller by its transport and id as they are at each call, one caller object or many', () => {
    const config = resolveHostConfig({ profileDir: '/tmp/p' })._unsafeUnwrap();
    const caller: { id: string; transport?: string } = { id: 'ann', transport: 'http' };
    expect(callBudget(config, { caller }).caller).toBe('["http","ann"]');
    expect(callBudget(config, { caller }).caller).toBe('["http","ann"]');
    // An application that reuses one object and changes it is keyed by what it says now, not by a kept key.
    caller.id = 'bob';
    expect(callBudget(config, { caller }).caller).toBe('["http","bob"]');
    delete caller.transport;
    expect(callBudget(config, { caller }).caller).toBe('[null,"bob"]');
    expect(callBudget(config, { caller: { id: 'bob', transport: 'stdio' } }).caller).toBe('["stdio","bob"]');
  });
});

describe('run settings of one plugin', () => {
  it('are its entry in plugins, else the host options, else the defaults (tolerate, 1 MiB, 30 s)', () => {
    const defaults = resolveHostConfig({ profileDir: '/tmp/p' })._unsafeUnwrap();
    expect(pluginRunSettings(defaults, 'any')).toEqual({ stdout: 'tolerate', maxFrameBytes: 1024 * 1024, startupTimeoutMs: 30_000, maxInFlight: undefined, callTimeoutMs: 30_000, handshakeTimeoutMs: 5_000, ndjsonMalformed: 'fail-call', ndjsonCrash: 'sticky' });
    const config = resolveHostConfig({
      profileDir: '/tmp/p',
      stdout: 'strict',
      maxFrameBytes: 4096,
      plugins: { big: { maxFrameBytes: 8 * 1024 * 1024, stdout: 'tolerate', maxInFlight: 2 }, slow: { startupTimeoutMs: 90_000 } },
    })._unsafeUnwrap();
    expect(pluginRunSettings(config, 'big')).toEqual({ stdout: 'tolerate', maxFrameBytes: 8 * 1024 * 1024, startupTimeoutMs: 30_000, maxInFlight: 2, callTimeoutMs: 30_000, handshakeTimeoutMs: 5_000, ndjsonMalformed: 'fail-call', ndjsonCrash: 'sticky' });
    expect(pluginRunSettings(config, 'slow')).toEqual({ stdout: 'strict', maxFrameBytes: 4096, startupTimeoutMs: 90_000, maxInFlight: undefined, callTimeoutMs: 30_000, handshakeTimeoutMs: 5_000, ndjsonMalformed: 'fail-call', ndjsonCrash: 'sticky' });
    expect(pluginRunSettings(config, 'toString').stdout).toBe('strict');
  });

  it('are checked like every option: a policy that does not exist, a zero cap, an unknown field', () => {
    expect(resolveHostConfig({ stdout: 'loud' })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
    expect(resolveHostConfig({ plugins: { p: { maxFrameBytes: 0 } } })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
    expect(resolveHostConfig({ plugins: { p: { stdoutt: 'strict' } } })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { closest: 'plugins.p.stdout' } });
  });
});

describe('closestName', () => {
  it('suggests the nearest name, and nothing when no name is near', () => {
    expect(closestName('timeoutMS', ['timeoutMs', 'maxTotalTimeoutMs', 'signal'])).toBe('timeoutMs');
    expect(closestName('canery', ['canary', 'checksum'])).toBe('canary');
    expect(closestName('zzzz', ['canary', 'checksum'])).toBeUndefined();
    expect(closestName('x', [])).toBeUndefined();
  });
});

describe('one rule per kind of number', () => {
  it('accepts whole milliseconds up to what a timer can wait, and whole counts and bytes', () => {
    expect(numberProblem('milliseconds', 1)).toBeUndefined();
    expect(numberProblem('milliseconds', 2 ** 31 - 1)).toBeUndefined();
    expect(numberProblem('milliseconds', 2 ** 31)).toContain('must be a whole number of milliseconds');
    expect(numberProblem('milliseconds', 0.5)).toContain('got 0.5');
    expect(numberProblem('millisecondsOrZero', 0)).toBeUndefined();
    expect(numberProblem('count', 3)).toBeUndefined();
    expect(numberProblem('count', '3')).toContain('got "3"');
    expect(numberProblem('bytes', Number.NaN)).toContain('got NaN');
  });

  it('is the rule the sandbox spawner holds its own tree limits to', async () => {
    expect((await SandboxSpawner.create({ maxProcesses: 2.5 }))._unsafeUnwrapErr()).toMatchObject({
      code: 'HOST_INVALID_OPTIONS',
      message: `maxProcesses ${numberProblem('count', 2.5)!.replace(', got', ' or false, got')}`,
    });
    expect((await SandboxSpawner.create({ pluginLimits: { p: { memoryBytes: -1 } } }))._unsafeUnwrapErr().message).toBe(
      `pluginLimits.p.memoryBytes ${numberProblem('bytes', -1)!.replace(', got', ' or false, got')}`,
    );
  });
});
