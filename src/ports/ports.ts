/**
 * The I/O a module may reach besides its own files: time, randomness and
 * logging. Each has a real Node default; tests pass fakes to run, for
 * example, a whole quarantine schedule in milliseconds.
 */
import { randomBytes } from 'node:crypto';

/** Wall-clock time in milliseconds since the Unix epoch, and timers. */
export interface Clock {
  /** The current time, in epoch milliseconds. */
  now(): number;
  /** Calls `fn` after `ms` milliseconds; returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** Cryptographically strong random bytes. */
export interface Random {
  /** `n` random bytes. */
  bytes(n: number): Uint8Array;
}

/** A structured log record's level. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A pino-compatible logger surface: `logger.info({ ...fields }, 'message')`. */
export interface Logger {
  /** Debug-level record. */
  debug(fields: Record<string, unknown>, message: string): void;
  /** Info-level record. */
  info(fields: Record<string, unknown>, message: string): void;
  /** Warning-level record. */
  warn(fields: Record<string, unknown>, message: string): void;
  /** Error-level record. */
  error(fields: Record<string, unknown>, message: string): void;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

/** Node's CSPRNG. */
export const systemRandom: Random = {
  bytes: (n) => new Uint8Array(randomBytes(n)),
};

const discard = (): void => undefined;

/** A logger that drops everything: the library is silent unless given one. */
export const silentLogger: Logger = { debug: discard, info: discard, warn: discard, error: discard };
