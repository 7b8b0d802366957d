/**
 * The host's side of a Node IPC channel whose other end a plugin may reach
 * (the egress bridge runs in the plugin's sandbox, as its user). Node parses
 * that channel inside its own read callback: a line that is not JSON throws
 * there, and a line without end grows one string until V8 refuses it with a
 * RangeError; either is an uncaught exception that ends the host. So the
 * channel's read callback is wrapped: an exception in it, or more than
 * `maxChars` pending without a line end, ends the child (SIGKILL to its
 * process group) and closes the channel, and nothing more is read from it.
 *
 * Node exposes no public hook for this; the wrapper reaches the channel
 * handle and its pending-line buffer through the symbols Node keys them by
 * (`kChannelHandle`, `kJSONBuffer`, present in Node 20 to 24). When they are
 * missing the guard reports that it could not be installed, and the caller
 * refuses to use the channel.
 */
import type { ChildProcess } from 'node:child_process';

type ReadCallback = (this: unknown, ...args: unknown[]) => unknown;

const symbolNamed = (target: object, description: string): symbol | undefined => Object.getOwnPropertySymbols(target).find((s) => s.description === description);

/**
 * Guards `child`'s IPC channel as described above; `onHostile` hears why
 * (`unparseable` or `oversize`) once. Returns `false` when this Node keeps
 * the channel where the guard cannot reach it.
 */
export function guardChannel(child: ChildProcess, maxChars: number, onHostile: (reason: 'unparseable' | 'oversize') => void): boolean {
  const handleKey = symbolNamed(child, 'kChannelHandle');
  const handle = handleKey === undefined ? undefined : ((child as unknown as Record<symbol, unknown>)[handleKey] as Record<string | symbol, unknown> | undefined);
  const read = handle?.['onread'];
  const pendingKey = handle === undefined ? undefined : symbolNamed(handle, 'kJSONBuffer');
  if (handle === undefined || typeof read !== 'function' || pendingKey === undefined) return false;
  let closed = false;
  const close = (reason: 'unparseable' | 'oversize'): void => {
    closed = true;
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }
    if (child.connected) child.disconnect();
    onHostile(reason);
  };
  handle['onread'] = function guardedRead(this: unknown, ...args: unknown[]): unknown {
    if (closed) return undefined;
    try {
      const result = (read as ReadCallback).apply(this, args);
      const pending = handle[pendingKey];
      if (typeof pending === 'string' && pending.length > maxChars) close('oversize');
      return result;
    } catch {
      close('unparseable');
      return undefined;
    }
  };
  return true;
}
