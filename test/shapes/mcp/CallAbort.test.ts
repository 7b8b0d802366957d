import { describe, expect, it } from 'vitest';
import { CallAbort } from '../../../src/shapes/mcp/CallAbort.js';

describe('CallAbort', () => {
  it('aborts once: listeners run once and the first author and reason stay', () => {
    const abort = new CallAbort();
    const heard: string[] = [];
    abort.addEventListener('abort', () => heard.push('a'));
    abort.addEventListener('abort', () => heard.push('b'));
    expect(() => abort.throwIfAborted()).not.toThrow();
    const cap = new Error('cap');
    abort.abort('total-timeout', cap);
    abort.abort('caller', new Error('late'));
    expect(heard).toEqual(['a', 'b']);
    expect(abort).toMatchObject({ aborted: true, by: 'total-timeout', reason: cap });
    expect(() => abort.throwIfAborted()).toThrow(cap);
  });

  it('drops removed listeners, other event types, and listeners added after the abort', () => {
    const abort = new CallAbort();
    const heard: string[] = [];
    const removed = (): number => heard.push('removed');
    abort.addEventListener('abort', removed);
    abort.addEventListener('other', () => heard.push('other'));
    abort.removeEventListener('abort', removed);
    abort.abort('caller', 'why');
    abort.addEventListener('abort', () => heard.push('late'));
    expect(heard).toEqual([]);
  });

  it("follows a caller's signal until unfollowed, and one already aborted at once", () => {
    const followed = new CallAbort();
    const caller = new AbortController();
    followed.follow(caller.signal);
    caller.abort('stop');
    expect(followed).toMatchObject({ aborted: true, by: 'caller', reason: 'stop' });

    const unfollowed = new CallAbort();
    const later = new AbortController();
    unfollowed.follow(later.signal)();
    later.abort('stop');
    expect(unfollowed.aborted).toBe(false);

    const early = new CallAbort();
    early.follow(AbortSignal.abort('before'));
    expect(early).toMatchObject({ aborted: true, by: 'caller', reason: 'before' });
  });
});
