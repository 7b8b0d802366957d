import { oneLineField, terminalText, type OutputStream } from './style.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 80;

/**
 * A one-line progress indicator on stderr. It draws only on a terminal (and
 * never in `--json` mode), so piped output and logs stay clean; elsewhere
 * every method is a no-op.
 */
export class Spinner {
  readonly #stream: OutputStream;
  readonly #enabled: boolean;
  #label = '';
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;

  /**
   * @param stream - Where to draw (stderr).
   * @param enabled - Whether to draw at all.
   */
  constructor(stream: OutputStream, enabled: boolean) {
    this.#stream = stream;
    this.#enabled = enabled;
  }

  /** Shows `label`, starting the animation on first use. */
  update(label: string): void {
    if (!this.#enabled) return;
    this.#label = label;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#draw(), FRAME_MS);
      // A forgotten spinner must never keep the process alive.
      this.#timer.unref();
    }
    this.#draw();
  }

  /** Stops and erases the line. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#enabled && this.#label !== '') this.#stream.write('\r\u001b[2K');
    this.#label = '';
  }

  #draw(): void {
    const frame = FRAMES[this.#frame++ % FRAMES.length] ?? '';
    // The label may carry a plugin's progress message: on its one line, and as text.
    this.#stream.write(`\r\u001b[2K${frame} ${terminalText(oneLineField(this.#label))}`);
  }
}
