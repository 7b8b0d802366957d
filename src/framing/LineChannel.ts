import { hostError, type HostError } from '../errors/HostError.js';
import type { Clock } from '../ports/ports.js';
import type { PluginProcess } from '../process/PluginProcess.js';
import { DEFAULT_MAX_FRAME_BYTES, LineReader, type OversizeLine } from './LineReader.js';

/** How a {@link LineChannel} ended. */
export interface LineChannelEnd {
  /** Whether the plugin ended it (end of stdout, or its exit) rather than the host's `close()`. */
  readonly byPeer: boolean;
  /** Bytes the plugin left after its last newline when its stdout ended, if any. */
  readonly partial: string | undefined;
}

/** What a {@link LineChannel} reports. */
export interface LineChannelHandlers {
  /** A complete line, without its newline. */
  readonly onLine: (line: string) => void;
  /**
   * A line crossed the frame cap: `PLUGIN_FRAME_TOO_LARGE`, told as soon as
   * the line crosses it (before its newline). The rest of the line is dropped
   * and reading goes on; the protocol decides whether the plugin survives it.
   */
  readonly onOversize: (violation: HostError) => void;
  /** A line told to `onOversize` reached its newline: its length and both ends (see `OversizeLine`). */
  readonly onOversizeEnd?: (line: OversizeLine) => void;
  /** A line told to `onOversize` grew far past the cap without ending (see `OVERSIZE_RUNAWAY_FACTOR`). */
  readonly onOversizeRunaway?: (violation: HostError) => void;
  /** The channel ended; told once, whichever side ended it. */
  readonly onEnd: (end: LineChannelEnd) => void;
  /** A write to the plugin's stdin failed (it exited while the host wrote). */
  readonly onWriteError?: (error: Error) => void;
}

/** Settings of a {@link LineChannel}. */
export interface LineChannelOptions {
  /** The cap on one stdout line, in bytes. Default 1 MiB. */
  readonly maxFrameBytes?: number;
  /** Runs the wait for stdout after the exit; no timer of the channel bypasses it. */
  readonly clock: Clock;
  /**
   * How long stdout may still deliver buffered lines after the process
   * exited before the channel ends anyway (a grandchild can hold stdout
   * open). Unset: only the end of stdout ends the channel.
   */
  readonly stdoutGraceAfterExitMs?: number;
}

interface QueuedLine {
  readonly text: string;
  readonly bytes: number;
  readonly done: (written: boolean) => void;
  readonly signal: AbortSignal | undefined;
}

const WRITTEN: Promise<boolean> = Promise.resolve(true);
const NOT_WRITTEN: Promise<boolean> = Promise.resolve(false);

/** The one text every protocol session fails a call with once it was closed. */
export function sessionClosedError(shape: string): HostError {
  return hostError('HOST_CLOSED', 'the plugin session is closed', { details: { shape } });
}

/** The frame cap violation every protocol reports, before adding its own context. */
export function frameTooLarge(bytesSeen: number, maxFrameBytes: number): HostError {
  return hostError('PLUGIN_FRAME_TOO_LARGE', `plugin wrote a line longer than the ${maxFrameBytes}-byte frame cap (${bytesSeen} bytes seen)`, {
    details: { bytes_seen: bytesSeen, max_frame_bytes: maxFrameBytes },
  });
}

/**
 * Newline-delimited text in both directions over a plugin's stdin and stdout,
 * shared by every stdio protocol (MCP, ndjson-rpc, handshake).
 *
 * Reading goes through {@link LineReader}, so one line is capped. Writing
 * honours backpressure: once `write()` reports a full pipe, later lines wait
 * in the channel's queue until `drain`, so what the host holds for a plugin
 * that stops reading is the pipe's buffer plus the lines of callers still
 * waiting (a line whose caller gave up leaves the queue). The channel ends
 * once, by one path: stdout ended, the process exited (after
 * `stdoutGraceAfterExitMs`), or `close()`.
 */
export class LineChannel {
  readonly maxFrameBytes: number;
  private readonly reader: LineReader;
  private readonly queue: QueuedLine[] = [];
  private queueBytes = 0;
  /** The writer whose line filled the pipe: resumed on `drain`. */
  private filledBy: ((written: boolean) => void) | undefined;
  private blocked = false;
  /** Whether a line went to the pipe in this turn of the event loop; the turn's later lines are held (corked) until its end. */
  private wroteThisTurn = false;
  private corked = false;
  private ended = false;
  private cancelExitTimer: (() => void) | undefined;
  private readonly onDrain = (): void => this.flush();
  private readonly endTurn = (): void => {
    this.wroteThisTurn = false;
    if (!this.corked) return;
    this.corked = false;
    this.process.stdin.uncork();
  };
  private readonly onStdinError = (error: Error): void => {
    if (!this.ended) this.handlers.onWriteError?.(error);
  };

  /**
   * @param process - The running plugin.
   * @param handlers - Where lines, oversize frames, write errors and the end are told.
   * @param options - Frame cap, clock and the wait for stdout after the exit.
   */
  constructor(
    private readonly process: PluginProcess,
    private readonly handlers: LineChannelHandlers,
    options: LineChannelOptions,
  ) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.reader = new LineReader(
      process.stdout,
      {
        onLine: handlers.onLine,
        onOversize: (bytesSeen) => handlers.onOversize(frameTooLarge(bytesSeen, this.maxFrameBytes)),
        ...(handlers.onOversizeEnd === undefined ? {} : { onOversizeEnd: handlers.onOversizeEnd }),
        ...(handlers.onOversizeRunaway === undefined
          ? {}
          : { onOversizeRunaway: (bytesSeen: number) => handlers.onOversizeRunaway?.(frameTooLarge(bytesSeen, this.maxFrameBytes)) }),
        onEnd: (partial) => this.end(true, partial),
      },
      this.maxFrameBytes,
    );
    process.stdin.on('error', this.onStdinError);
    process.stdin.on('drain', this.onDrain);
    const grace = options.stdoutGraceAfterExitMs;
    if (grace !== undefined) {
      void process.exited.then(() => {
        if (!this.ended) this.cancelExitTimer = options.clock.setTimer(() => this.end(true, undefined), grace);
      });
    }
  }

  /** Whether the channel has ended (either side). */
  get isEnded(): boolean {
    return this.ended;
  }

  /** Whether the pipe is full: a line sent now waits in the queue. */
  get isBackedUp(): boolean {
    return this.blocked;
  }

  /** Bytes the host holds for the plugin's stdin: the pipe's buffer plus the lines waiting in the queue. */
  get queuedBytes(): number {
    return this.process.stdin.writableLength + this.queueBytes;
  }

  /**
   * Writes `text` and a newline. Resolves `true` once the line is in the
   * pipe and the pipe has room again (at once when it has), `false` when the
   * channel ended first or `withdrawn` fired while the line still waited.
   */
  send(text: string, withdrawn?: AbortSignal): Promise<boolean> {
    if (this.ended) return NOT_WRITTEN;
    const line = `${text}\n`;
    if (!this.blocked) return this.write(line);
    if (withdrawn?.aborted === true) return NOT_WRITTEN;
    return new Promise((done) => {
      const queued: QueuedLine = { text: line, bytes: Buffer.byteLength(line), done, signal: withdrawn };
      this.queue.push(queued);
      this.queueBytes += queued.bytes;
      withdrawn?.addEventListener('abort', () => this.withdraw(queued), { once: true });
    });
  }

  /** Whether the line sent with `withdrawn` still waits in the queue (not yet handed to the pipe). */
  isQueued(withdrawn: AbortSignal): boolean {
    return this.queue.some((queued) => queued.signal === withdrawn);
  }

  /** Ends the channel from the host's side; the process itself is the caller's to stop. */
  close(): void {
    this.end(false, undefined);
  }

  /**
   * The first line of a turn goes to the pipe at once; lines written after it
   * in the same turn (the calls a gateway read from many clients at once)
   * are held until the turn ends and go in one write: one system call and one
   * wake-up of the plugin for all of them, rather than one each.
   */
  private write(line: string): Promise<boolean> {
    const { stdin } = this.process;
    if (!this.wroteThisTurn) {
      this.wroteThisTurn = true;
      setImmediate(this.endTurn);
    } else if (!this.corked) {
      this.corked = true;
      stdin.cork();
    }
    if (stdin.write(line)) return WRITTEN;
    this.blocked = true;
    return new Promise((done) => (this.filledBy = done));
  }

  private withdraw(queued: QueuedLine): void {
    const at = this.queue.indexOf(queued);
    if (at === -1) return;
    this.queue.splice(at, 1);
    this.queueBytes -= queued.bytes;
    queued.done(false);
  }

  private flush(): void {
    if (this.ended) return;
    this.blocked = false;
    const resumed = this.filledBy;
    this.filledBy = undefined;
    resumed?.(true);
    while (!this.blocked && !this.ended) {
      const next = this.queue.shift();
      if (next === undefined) return;
      this.queueBytes -= next.bytes;
      if (next.signal?.aborted === true) {
        next.done(false);
        continue;
      }
      void this.write(next.text).then(next.done);
    }
  }

  private end(byPeer: boolean, partial: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.cancelExitTimer?.();
    this.reader.dispose();
    this.process.stdin.off('drain', this.onDrain);
    this.filledBy?.(false);
    this.filledBy = undefined;
    for (const queued of this.queue.splice(0)) queued.done(false);
    this.queueBytes = 0;
    this.handlers.onEnd({ byPeer, partial });
  }
}
