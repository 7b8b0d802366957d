import type { Readable } from 'node:stream';

/** Default cap on one frame: 1 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/** Bytes kept from each end of a line dropped for crossing the cap, so a protocol can tell which request it answered. */
export const OVERSIZE_EDGE_BYTES = 256;

/**
 * How many times the cap a dropped line may grow before `onOversizeRunaway`:
 * an answer somewhat over the cap is worth draining to fail only its call;
 * a line this long is output that may never end.
 */
export const OVERSIZE_RUNAWAY_FACTOR = 16;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** A line that crossed the cap, once its newline arrived. */
export interface OversizeLine {
  /** The whole line's length in bytes, newline excluded. */
  readonly bytes: number;
  /** Its first {@link OVERSIZE_EDGE_BYTES} bytes, as UTF-8 text (a character cut at the edge is replaced). */
  readonly head: string;
  /** Its last {@link OVERSIZE_EDGE_BYTES} bytes, as UTF-8 text. */
  readonly tail: string;
}

/** What a {@link LineReader} reports. */
export interface LineReaderHandlers {
  /** A complete line, without its `\n` (and without a trailing `\r`). */
  readonly onLine: (line: string) => void;
  /**
   * A line grew past the cap. Called once per such line, as soon as the bytes
   * received for it exceed `maxFrameBytes`: before its newline arrives, so a
   * line that never ends is reported too. `bytesSeen` counts the line's bytes
   * received so far (a trailing `\r` included): more than the cap, and by how
   * much depends on how the stream was chunked, at most one chunk. The rest of
   * the line is discarded silently up to and including its newline; reading
   * then resumes with the next line, so the protocol decides whether to stop
   * the plugin. A stream that ends while discarding reports `onEnd(undefined)`.
   */
  readonly onOversize?: (bytesSeen: number) => void;
  /**
   * A line reported by `onOversize` reached its newline: its length and both
   * ends. A line that never ends is never reported here.
   */
  readonly onOversizeEnd?: (line: OversizeLine) => void;
  /**
   * A line reported by `onOversize` grew past {@link OVERSIZE_RUNAWAY_FACTOR}
   * times the cap without a newline (told once, with the bytes seen); it is
   * still discarded, and `onOversizeEnd` still follows if it ever ends.
   */
  readonly onOversizeRunaway?: (bytesSeen: number) => void;
  /** The stream ended; `partial` holds bytes after the last newline, if any. */
  readonly onEnd?: (partial: string | undefined) => void;
}

/**
 * Splits a byte stream into UTF-8 lines with a hard cap on line length, so a
 * plugin cannot make the host buffer unbounded output. Shared by every stdio
 * protocol (MCP, ndjson-rpc, handshake). After `dispose()` no handler is
 * called again, even for the rest of a chunk being split.
 */
export class LineReader {
  private readonly chunks: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;
  private droppedHead: Buffer = Buffer.alloc(0);
  private droppedTail: Buffer = Buffer.alloc(0);
  private droppedBytes = 0;
  private stopped = false;
  private readonly onData = (chunk: Buffer): void => this.push(chunk);
  private readonly onStreamEnd = (): void => this.finish();

  /**
   * @param stream - The plugin's stdout.
   * @param handlers - Where lines, oversize frames and the end are reported.
   * @param maxFrameBytes - The cap on one line, in bytes. Default 1 MiB.
   */
  constructor(
    private readonly stream: Readable,
    private readonly handlers: LineReaderHandlers,
    private readonly maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
  ) {
    stream.on('data', this.onData);
    stream.on('end', this.onStreamEnd);
    stream.on('close', this.onStreamEnd);
  }

  /** Stops listening to the stream. */
  dispose(): void {
    this.stopped = true;
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onStreamEnd);
    this.stream.off('close', this.onStreamEnd);
  }

  private push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length && !this.stopped) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      if (nl !== -1 && this.pendingBytes === 0 && !this.discarding && end - start <= this.maxFrameBytes) {
        // A whole line inside one chunk (every answer of a warm call) is decoded in place: no view, no copy.
        this.handlers.onLine(chunk.toString('utf8', start, end > start && chunk[end - 1] === CARRIAGE_RETURN ? end - 1 : end));
        start = nl + 1;
        continue;
      }
      if (this.discarding) this.drop(chunk.subarray(start, end));
      else this.keep(chunk.subarray(start, end));
      if (nl === -1 || this.stopped) return;
      if (this.discarding) this.endDropped();
      else this.handlers.onLine(this.takePending());
      start = nl + 1;
    }
  }

  /** Adds a piece of the current line, or drops the line once it crosses the cap. */
  private keep(piece: Buffer): void {
    const seen = this.pendingBytes + piece.length;
    if (seen > this.maxFrameBytes) {
      this.discarding = true;
      const line = Buffer.concat([...this.chunks, piece]);
      this.droppedHead = Buffer.from(line.subarray(0, OVERSIZE_EDGE_BYTES));
      this.droppedTail = Buffer.from(line.subarray(Math.max(0, line.length - OVERSIZE_EDGE_BYTES)));
      this.droppedBytes = seen;
      this.chunks.length = 0;
      this.pendingBytes = 0;
      this.handlers.onOversize?.(seen);
    } else if (piece.length > 0) {
      this.chunks.push(piece);
      this.pendingBytes = seen;
    }
  }

  /** Counts a piece of a line being dropped and keeps the last bytes of it. */
  private drop(piece: Buffer): void {
    if (piece.length === 0) return;
    const runawayAt = this.maxFrameBytes * OVERSIZE_RUNAWAY_FACTOR;
    const before = this.droppedBytes;
    this.droppedBytes += piece.length;
    if (before <= runawayAt && this.droppedBytes > runawayAt) this.handlers.onOversizeRunaway?.(this.droppedBytes);
    this.droppedTail =
      piece.length >= OVERSIZE_EDGE_BYTES
        ? Buffer.from(piece.subarray(piece.length - OVERSIZE_EDGE_BYTES))
        : Buffer.concat([this.droppedTail, piece]).subarray(-OVERSIZE_EDGE_BYTES);
  }

  private endDropped(): void {
    this.discarding = false;
    let tail = this.droppedTail;
    if (tail.length > 0 && tail[tail.length - 1] === CARRIAGE_RETURN) tail = tail.subarray(0, tail.length - 1);
    const line: OversizeLine = { bytes: this.droppedBytes, head: this.droppedHead.toString('utf8'), tail: tail.toString('utf8') };
    this.droppedHead = this.droppedTail = Buffer.alloc(0);
    this.droppedBytes = 0;
    this.handlers.onOversizeEnd?.(line);
  }

  private takePending(): string {
    let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.pendingBytes);
    this.chunks.length = 0;
    this.pendingBytes = 0;
    if (buf.length > 0 && buf[buf.length - 1] === CARRIAGE_RETURN) buf = buf.subarray(0, buf.length - 1);
    return buf.toString('utf8');
  }

  private finish(): void {
    if (this.stopped) return;
    this.stopped = true;
    // An oversize line cut off by the end was reported when it crossed the cap.
    const partial = !this.discarding && this.pendingBytes > 0 ? this.takePending() : undefined;
    this.discarding = false;
    this.handlers.onEnd?.(partial);
  }
}
