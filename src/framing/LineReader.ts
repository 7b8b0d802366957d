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
   * A line grew past the cap. Its bytes are discarded up to the next newline;
   * reading then resumes, so the protocol decides whether to stop the plugin.
   */
  readonly onOversize?: (bytesSeen: number) => void;
  /** The stream ended; `partial` holds bytes after the last newline, if any. */
  readonly onEnd?: (partial: string | undefined) => void;
}

/**
 * Splits a byte stream into UTF-8 lines with a hard cap on line length, so a
 * plugin cannot make the host buffer unbounded output. Shared by every stdio
 * protocol (MCP, ndjson-rpc, handshake).
 */
export class LineReader {
  private readonly chunks: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;
  private discardedBytes = 0;
  private ended = false;
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
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onStreamEnd);
    this.stream.off('close', this.onStreamEnd);
  }

  private push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.discarding) {
        this.discardedBytes += piece.length;
      } else if (this.pendingBytes + piece.length > this.maxFrameBytes) {
        this.discarding = true;
        this.discardedBytes = this.pendingBytes + piece.length;
        this.chunks.length = 0;
        this.pendingBytes = 0;
      } else if (piece.length > 0) {
        this.chunks.push(piece);
        this.pendingBytes += piece.length;
      }
      if (nl === -1) return;
      this.completeLine();
      start = nl + 1;
    }
  }

  private completeLine(): void {
    if (this.discarding) {
      const seen = this.discardedBytes;
      this.discarding = false;
      this.discardedBytes = 0;
      this.handlers.onOversize?.(seen);
      return;
    }
    const line = this.takePending();
    this.handlers.onLine(line);
  }

  private takePending(): string {
    let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.pendingBytes);
    this.chunks.length = 0;
    this.pendingBytes = 0;
    if (buf.length > 0 && buf[buf.length - 1] === CARRIAGE_RETURN) buf = buf.subarray(0, buf.length - 1);
    return buf.toString('utf8');
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.discarding) {
      this.discarding = false;
      this.handlers.onOversize?.(this.discardedBytes);
      this.handlers.onEnd?.(undefined);
      return;
    }
    this.handlers.onEnd?.(this.pendingBytes > 0 ? this.takePending() : undefined);
  }
}
