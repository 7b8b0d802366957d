/**
 * Samples this process's memory while a scenario runs, so a plugin that
 * floods the host is caught by a number rather than by the machine running
 * out of memory.
 */

/** What a sampler saw. */
export interface MemoryFigures {
  /** RSS when sampling started, in MiB. */
  readonly baselineRssMb: number;
  /** Highest RSS seen, in MiB. */
  readonly peakRssMb: number;
}

const MIB = 1024 * 1024;

/** Samples `process.memoryUsage()` every `intervalMs` until stopped. */
export class MemorySampler {
  private readonly baseline = process.memoryUsage().rss;
  private peakRss = this.baseline;
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs = 20) {
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    this.peakRss = Math.max(this.peakRss, process.memoryUsage().rss);
  }

  /** Stops sampling and returns the figures. */
  stop(): MemoryFigures {
    clearInterval(this.timer);
    this.sample();
    const mb = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10;
    return { baselineRssMb: mb(this.baseline), peakRssMb: mb(this.peakRss) };
  }
}
