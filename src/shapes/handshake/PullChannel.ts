import type { HostError } from '../../errors/HostError.js';
import { LineChannel } from '../../framing/LineChannel.js';
import type { Clock } from '../../ports/ports.js';
import type { PluginProcess } from '../../process/PluginProcess.js';

/** What the next read from a plugin's stdout produced. */
export type ChannelEvent =
  | { readonly kind: 'line'; readonly line: string }
  /** A line crossed the frame cap (reported at the crossing; the rest of it is discarded). */
  | { readonly kind: 'oversize'; readonly violation: HostError }
  | { readonly kind: 'end'; readonly partial: string | undefined }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'interrupted'; readonly error: HostError };

type StreamEvent = Extract<ChannelEvent, { kind: 'line' | 'oversize' | 'end' }>;

/**
 * Lines (or oversize reports) held that nobody asked for yet. The plugin
 * cannot write its execute response before it read the request, so one is
 * the most an exchange ever has waiting, and a second is the extra output
 * that fails it: a third adds nothing. Without a bound, a plugin that floods
 * stdout while the host stops it (up to the teardown timeout, SIGTERM
 * ignored) filled the host's memory (review R11 F5: 400 MB in 2 s).
 */
const MAX_UNASKED_LINES = 2;

/**
 * Pull-style use of the shared {@link LineChannel} for a one-shot plugin: the
 * exchange asks for the next event with a deadline, and events that arrive
 * early wait in order, so an unexpected extra line is seen rather than lost.
 * Only the end of stdout ends it: the teardown checks the exit itself.
 * Past {@link MAX_UNASKED_LINES} waiting, further lines are read and dropped.
 */
export class PullChannel {
  private readonly queue: StreamEvent[] = [];
  private readonly channel: LineChannel;
  private waiter: ((event: StreamEvent) => void) | undefined;

  constructor(
    process: PluginProcess,
    maxFrameBytes: number,
    private readonly clock: Clock,
  ) {
    this.channel = new LineChannel(
      process,
      {
        onLine: (line) => this.push({ kind: 'line', line }),
        onOversize: (violation) => this.push({ kind: 'oversize', violation }),
        onEnd: ({ byPeer, partial }) => {
          if (byPeer) this.push({ kind: 'end', partial });
        },
      },
      { maxFrameBytes, clock },
    );
  }

  /** Writes one message as a line (see {@link LineChannel.send}). */
  send(text: string): Promise<boolean> {
    return this.channel.send(text);
  }

  /** Whether an event arrived that nobody asked for yet. */
  get hasQueued(): boolean {
    return this.queue.length > 0 && this.queue[0]?.kind !== 'end';
  }

  /** The next event, `timeout` after `timeoutMs`, or `interrupted` when `interrupt` fires first. */
  next(timeoutMs: number, interrupt: Promise<HostError>): Promise<ChannelEvent> {
    const queued = this.queue.shift();
    if (queued !== undefined) {
      if (queued.kind === 'end') this.queue.unshift(queued);
      return Promise.resolve(queued);
    }
    return new Promise((resolve) => {
      let done = false;
      const finish = (event: ChannelEvent): void => {
        if (done) return;
        done = true;
        cancelTimer();
        this.waiter = undefined;
        resolve(event);
      };
      const cancelTimer = this.clock.setTimer(() => finish({ kind: 'timeout' }), timeoutMs);
      this.waiter = finish;
      void interrupt.then((error) => finish({ kind: 'interrupted', error }));
    });
  }

  /** Stops reading. */
  dispose(): void {
    this.channel.close();
  }

  private push(event: StreamEvent): void {
    const waiter = this.waiter;
    if (waiter === undefined) {
      if (event.kind !== 'end' && this.queue.length >= MAX_UNASKED_LINES) return;
      this.queue.push(event);
      return;
    }
    waiter(event);
    if (event.kind === 'end') this.queue.push(event);
  }
}
