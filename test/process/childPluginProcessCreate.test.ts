import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ChildPluginProcess } from '../../src/process/ChildPluginProcess.js';

type ChildProcess = Parameters<typeof ChildPluginProcess.create>[0];

// A child that never spawned: no pid, no pipes. Only create() looks at it.
const unspawnedChild = (): ChildProcess => Object.assign(new EventEmitter(), { pid: undefined, stdin: null, stdout: null, stderr: null }) as unknown as ChildProcess;

describe('ChildPluginProcess.create', () => {
  it('answers a child without a pid or pipes with HOST_INTERNAL_ERROR instead of throwing', () => {
    const created = ChildPluginProcess.create(unspawnedChild(), { tree: 'process-group' });
    const error = created._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INTERNAL_ERROR');
    expect(error.retryable).toBe(false);
  });
});
