/** Default size of the stderr ring buffer: 64 KiB. */
export const DEFAULT_STDERR_RING_BYTES = 64 * 1024;

/** Default cap on one stderr line handed to listeners: 16 KiB. */
export const DEFAULT_STDERR_LINE_MAX_BYTES = 16 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** What ends a stderr line cut at the line bound (the redaction of known secrets looks for it: a secret may straddle the cut). */
export const TRUNCATION_MARK = ' [line truncated]';

/**
 * Keeps the newest bytes a plugin wrote to stderr, and splits them into
 * bounded lines for listeners. Memory stays bounded however much a plugin
 * writes: the ring holds at most `ringBytes`, the pending line at most
 * `lineMaxBytes`.
 */
export class StderrRing {
  private readonly ring: Buffer;
  private start = 0;
  private length = 0;
  private dropped = false;
  private readonly pendingLine: Buffer[] = [];
  private pendingBytes = 0;
  private truncatingLine = false;
  private readonly listeners = new Set<(line: string) => void>();

  /**
   * @param ringBytes - How many of the newest bytes to keep.
   * @param lineMaxBytes - The longest line passed to listeners; the rest of a longer line is dropped.
   */
  constructor(
    ringBytes: number = DEFAULT_STDERR_RING_BYTES,
    private readonly lineMaxBytes: number = DEFAULT_STDERR_LINE_MAX_BYTES,
  ) {
    this.ring = Buffer.alloc(Math.max(1, ringBytes));
  }

  /** Adds a chunk of stderr output. */
  push(chunk: Buffer): void {
    this.keep(chunk);
    this.split(chunk);
  }

  /** Emits the last unterminated line, if any (call when stderr ends). */
  flush(): void {
    if (this.pendingBytes > 0 || this.truncatingLine) this.emitPending();
  }

  /** The newest bytes as UTF-8 text, starting at a character boundary. */
  tail(): string {
    const cap = this.ring.length;
    const first = this.ring.subarray(this.start, Math.min(cap, this.start + this.length));
    const wrapped = this.ring.subarray(0, Math.max(0, this.start + this.length - cap));
    const bytes = Buffer.concat([first, wrapped]);
    let from = 0;
    // A cut in the middle of a multi-byte character leaves continuation bytes (10xxxxxx) in front.
    while (from < bytes.length && from < 3 && (bytes[from]! & 0xc0) === 0x80) from++;
    return bytes.subarray(from).toString('utf8');
  }

  /** Whether older bytes were dropped to keep the newest: the tail then begins wherever the cut fell, inside a line. */
  get wrapped(): boolean {
    return this.dropped;
  }

  /** Subscribes to complete lines; returns an unsubscribe function. */
  onLine(listener: (line: string) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private keep(chunk: Buffer): void {
    const cap = this.ring.length;
    const bytes = chunk.length > cap ? chunk.subarray(chunk.length - cap) : chunk;
    let writeAt = (this.start + this.length) % cap;
    let offset = 0;
    while (offset < bytes.length) {
      const n = Math.min(bytes.length - offset, cap - writeAt);
      bytes.copy(this.ring, writeAt, offset, offset + n);
      offset += n;
      writeAt = (writeAt + n) % cap;
    }
    const total = this.length + bytes.length;
    if (chunk.length > bytes.length) this.dropped = true;
    if (total > cap) {
      this.dropped = true;
      this.start = (this.start + (total - cap)) % cap;
      this.length = cap;
    } else {
      this.length = total;
    }
  }

  private split(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, from);
      const end = nl === -1 ? chunk.length : nl;
      this.appendToLine(chunk.subarray(from, end));
      if (nl === -1) return;
      this.emitPending();
      from = nl + 1;
    }
  }

  private appendToLine(piece: Buffer): void {
    const room = this.lineMaxBytes - this.pendingBytes;
    if (piece.length > room) {
      this.truncatingLine = true;
      piece = piece.subarray(0, Math.max(0, room));
    }
    if (piece.length === 0) return;
    this.pendingLine.push(piece);
    this.pendingBytes += piece.length;
  }

  private emitPending(): void {
    let bytes = Buffer.concat(this.pendingLine);
    if (bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN) bytes = bytes.subarray(0, -1);
    const line = bytes.toString('utf8') + (this.truncatingLine ? TRUNCATION_MARK : '');
    this.pendingLine.length = 0;
    this.pendingBytes = 0;
    this.truncatingLine = false;
    for (const listener of this.listeners) listener(line);
  }
}
