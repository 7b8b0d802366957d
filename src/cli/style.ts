import terminalLayout from '../../etc/cli-terminal.json' with { type: 'json' };

/** A stream the CLI writes to: process.stdout / process.stderr, or a test double. */
export interface OutputStream {
  /** Writes text. */
  write(text: string): unknown;
  /** Whether a terminal is attached. */
  readonly isTTY?: boolean;
  /** The terminal's width in columns, when it reports one. */
  readonly columns?: number;
}

/** Text decorations; every function is the identity when colour is off. */
export interface Style {
  /** Whether colour is on. */
  readonly enabled: boolean;
  /** Bold. */
  bold(text: string): string;
  /** Dimmed. */
  dim(text: string): string;
  /** Red (failures). */
  red(text: string): string;
  /** Green (success). */
  green(text: string): string;
  /** Yellow (warnings, pending states). */
  yellow(text: string): string;
  /** Cyan (names). */
  cyan(text: string): string;
}

const sgr = (open: number, close: number) => (text: string): string => `\u001b[${open}m${text}\u001b[${close}m`;

// An escape sequence (CSI, OSC, or a two-character one) or a lone control character: C0 but tab and line feed, DEL, C1,
// and the bidirectional formatting characters, which reorder the text shown around them.
const CONTROL = new RegExp(
  String.raw`\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]?|[\u0000-\u0008\u000b-\u001f\u007f-\u009f${terminalLayout.bidiControls}]`,
  'g',
);
// The decorations createStyle writes, the only escape sequences the CLI itself prints through Output.
const OWN_DECORATION = /^\u001b\[(?:1|2|22|31|32|33|36|39)m$/;

/**
 * `text` as the CLI may put it on a terminal: every escape sequence and
 * control character removed (tab and line feed kept), bidirectional
 * formatting characters too, but the decorations of {@link createStyle}.
 * Names, descriptions, hints and messages printed for people come from
 * packages and plugins; an escape sequence in one could move the cursor and
 * rewrite lines already shown (the powers a person is asked to approve at
 * install), retitle the window or hide text, and a right-to-left override
 * could show its text backwards.
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (found) => (OWN_DECORATION.test(found) ? found : ''));
}

/**
 * A package's one-line field for a person: {@link terminalSafe}, with line
 * breaks as spaces so it cannot pose as lines of its own, and tabs as one
 * space each: a tab moves the cursor up to eight columns, past the width the
 * CLI counts when it wraps a field to the terminal.
 */
export function oneLineField(text: string): string {
  return terminalSafe(text.replace(/[\r\n]+/g, ' ').replaceAll('\t', ' '));
}
const plain = (text: string): string => text;

/**
 * Colour is for people: on only when the stream is a terminal, NO_COLOR is
 * unset (https://no-color.org) and `--no-color` was not given. FORCE_COLOR
 * (not "0") turns it on regardless, for terminals that do not look like one.
 */
export function colourEnabled(stream: OutputStream, env: Readonly<Record<string, string | undefined>>, noColorFlag: boolean): boolean {
  if (noColorFlag) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

/** A {@link Style} that decorates only when `enabled`. */
export function createStyle(enabled: boolean): Style {
  if (!enabled) return { enabled, bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
  return { enabled, bold: sgr(1, 22), dim: sgr(2, 22), red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), cyan: sgr(36, 39) };
}

/**
 * Rows as aligned columns: every cell padded to its column's widest cell,
 * two spaces between columns, the last column unpadded. `decorate` colours a
 * cell after padding, so escape codes never skew the alignment.
 */
export function columns(rows: readonly (readonly string[])[], decorate?: (text: string, row: number, column: number) => string): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row, r) =>
    row
      .map((cell, c) => {
        const padded = c === row.length - 1 ? cell : cell.padEnd(widths[c] ?? 0);
        return decorate ? decorate(padded, r, c) : padded;
      })
      .join('  ')
      .trimEnd(),
  );
}
