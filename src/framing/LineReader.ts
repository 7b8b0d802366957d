import type { Readable } from 'node:stream';

/** Default cap on one frame: 1 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

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
      if (!this.discarding) this.keep(chunk.subarray(start, end));
      if (nl === -1 || this.stopped) return;
      if (this.discarding) this.discarding = false;
      else this.handlers.onLine(this.takePending());
      start = nl + 1;
    }
  }

  /** Adds a piece of the current line, or drops the line once it crosses the cap. */
  private keep(piece: Buffer): void {
    const seen = this.pendingBytes + piece.length;
    if (seen > this.maxFrameBytes) {
      this.discarding = true;
      this.chunks.length = 0;
      this.pendingBytes = 0;
      this.handlers.onOversize?.(seen);
    } else if (piece.length > 0) {
      this.chunks.push(piece);
      this.pendingBytes = seen;
    }
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
