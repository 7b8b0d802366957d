/** Gives back a permit. Idempotent. */
export type Release = () => void;

/**
 * A counting semaphore in FIFO order: how many requests may be on the wire at
 * once (1 serializes them, as the protocol's reference host does).
 */
export class Permits {
  private available: number;
  private readonly waiting: ((release: Release) => void)[] = [];

  /** @param count - How many permits exist. */
  constructor(count: number) {
    this.available = count;
  }

  /** A permit now, or `undefined` when none is free (no promise, for the uncontended path). */
  tryAcquire(): Release | undefined {
    if (this.available === 0) return undefined;
    this.available -= 1;
    return this.releaser();
  }

  /** Resolves with a release function once a permit is free. */
  acquire(): Promise<Release> {
    return new Promise((resolve) => {
      if (this.available > 0) {
        this.available -= 1;
        resolve(this.releaser());
      } else {
        this.waiting.push(resolve);
      }
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next === undefined) this.available += 1;
      else next(this.releaser());
    };
  }
}
