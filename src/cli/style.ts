import { randomBytes } from 'node:crypto';
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

// The CLI's own decorations travel through the text it assembles as marks only this process can write: an APC string
// (which a terminal ignores) carrying a secret drawn at start and the SGR parameter. Text from a package or a running
// plugin is joined with them before it is printed, so a real SGR in it could not be told from the CLI's own red and green
// and could pose as a status line; with the secret, every escape sequence of that text is removed and only the marks
// become SGR when written (terminalText).
const OWN_SECRET = randomBytes(12).toString('hex');
const OWN_MARK = String.raw`\u001b_${OWN_SECRET}:(1|2|22|31|32|33|36|39)\u001b\\`;
const sgr = (open: number, close: number) => (text: string): string =>
  `\u001b_${OWN_SECRET}:${open}\u001b\\${text}\u001b_${OWN_SECRET}:${close}\u001b\\`;

// An escape sequence (CSI; OSC, DCS, SOS, PM and APC strings; a two-character one) or a lone control character: C0 but
// tab and line feed, DEL, C1, and the bidirectional formatting characters, which reorder the text shown around them.
// The CLI's own marks come first, so the string alternative cannot swallow them.
const CONTROL = new RegExp(
  String.raw`(${OWN_MARK})|\u001b\[[0-?]*[ -/]*[@-~]|\u001b[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]?|[\u0000-\u0008\u000b-\u001f\u007f-\u009f${terminalLayout.bidiControls}]`,
  'g',
);
const OWN_MARKS = new RegExp(OWN_MARK, 'g');

/**
 * `text` as the CLI may put it on a terminal: every escape sequence and
 * control character removed (tab and line feed kept), bidirectional
 * formatting characters too, whatever text they come from; only the
 * decorations {@link createStyle} added in this process stay (as marks that
 * {@link terminalText} turns into colour). Names, descriptions, hints and
 * messages printed for people come from packages and plugins; an escape
 * sequence in one could move the cursor and rewrite lines already shown (the
 * powers a person is asked to approve at install), retitle the window, hide
 * text or colour itself as the CLI's own status, and a right-to-left
 * override could show its text backwards.
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (found, own: string | undefined) => (own === undefined ? '' : found));
}

// CI runners take commands from a job's output: GitHub Actions a line that starts, after white space, with
// `::name ...::` (annotations, ::stop-commands::, ::add-mask::, ::set-output::), or that holds `##[name]` anywhere;
// Azure Pipelines `##vso[...]` anywhere (task.setvariable sets variables later steps read), TeamCity `##teamcity[`.
// A plugin's or package's text printed there could forge annotations, stop the processing of the CLI's own or set
// variables for later steps. A zero-width space between the two marks leaves what a person reads and keeps the runner
// from parsing it. Only a line with a second `::` is a command (an IPv6 `::1` is left alone).
const CI_LINE_COMMAND = /^(\s*:)(?=:[^\n]*::)/gm;
const CI_MARKED_COMMAND = /#(?=#(?:vso|teamcity)?\[)/gi;
const CI_MARKED_PAIR = /##(?=(?:vso|teamcity)?\[)/gi;

/**
 * `text` with nothing a CI runner reads as a command in its output: a
 * zero-width space splits a line-leading `::` (when the line holds a second
 * one) and every `##[`, `##vso[` and `##teamcity[`. The CLI's own workflow
 * annotations are written without it (`Output.annotation`).
 */
export function ciCommandSafe(text: string): string {
  return text.replace(CI_LINE_COMMAND, '$1\u200b').replace(CI_MARKED_COMMAND, '#\u200b');
}

/** `##[`, `##vso[` and `##teamcity[` in JSON text as the same strings, their second `#` escaped (`\u0023`), so no runner reads a command in them. */
export function ciCommandSafeJson(json: string): string {
  return json.replace(CI_MARKED_PAIR, '#\\u0023');
}

/**
 * What the CLI writes to a stream for people: {@link terminalSafe} and
 * {@link ciCommandSafe}, then the CLI's own decorations as the SGR
 * sequences a terminal shows.
 */
export function terminalText(text: string): string {
  return ciCommandSafe(terminalSafe(text)).replace(OWN_MARKS, (_found, code: string) => `\u001b[${code}m`);
}

/**
 * A package's or plugin's text that may span lines, printed below a line
 * of the CLI's own: every line after the first starts with `indent`, so
 * none of them starts at column 0 where only the CLI's own lines (`error
 * CODE:`, `hint:`, status lines) do.
 */
export function continued(text: string, indent: string): string {
  return text.split(/\r\n|\n|\r|\u2028|\u2029/).join(`\n${indent}`);
}

/**
 * A package's one-line field for a person: {@link terminalSafe}, with line
 * breaks as spaces so it cannot pose as lines of its own, and tabs as one
 * space each: a tab moves the cursor up to eight columns, past the width the
 * CLI counts when it wraps a field to the terminal.
 */
export function oneLineField(text: string): string {
  return terminalSafe(text.replace(/[\r\n\u2028\u2029]+/g, ' ').replaceAll('\t', ' '));
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
