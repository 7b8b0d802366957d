import terminalLayout from '../../etc/cli-terminal.json' with { type: 'json' };
import type { HostError } from '../index.js';
import { cliHint } from './cliHints.js';
import { Spinner } from './Spinner.js';
import { ciCommandSafe, ciCommandSafeJson, colourEnabled, columns, continued, createStyle, oneLineField, terminalSafe, terminalText, type OutputStream, type Style } from './style.js';

/** The process surroundings a command runs in (process itself, in main.ts). */
export interface Terminal {
  /** Results. */
  readonly stdout: OutputStream;
  /** Errors, progress and prompts. */
  readonly stderr: OutputStream;
  /** Input for prompts and `run ... -`. */
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  /** The environment. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

// JSON.stringify escapes C0 controls but leaves DEL, the C1 controls (U+009B is a CSI to some terminals) and the line
// separators raw, and the bidirectional formatting characters; a package's text carrying them would reach a terminal
// that shows --json output. Escaped, the document parses to the same value.
const RAW_IN_JSON = new RegExp(String.raw`[\u007f-\u009f\u2028\u2029${terminalLayout.bidiControls}]`, 'g');
const escapedCodePoint = (found: string): string => `\\u${found.charCodeAt(0).toString(16).padStart(4, '0')}`;
// Where the continuation lines of a failure's message and hint start: as deep as the plugin's stderr tail.
const MESSAGE_INDENT = '    ';

/** A violation as the CLI prints it. */
export interface PrintedViolation {
  /** JSON pointer into the manifest. */
  readonly pointer: string;
  /** Stable code. */
  readonly code: string;
  /** What is wrong. */
  readonly message: string;
  /** The check that found it. */
  readonly stage: string;
  /** What to do about it (the registry's remediation for the code). */
  readonly hint?: string;
  /** Where it is in the manifest file, when the file is text the CLI could read. */
  readonly line?: number;
  /** The column on {@link PrintedViolation.line}. */
  readonly column?: number;
}

/**
 * Everything a command prints goes through here, so each command states
 * what happened once and the two audiences are served consistently: people
 * get aligned text on stdout and errors on stderr, colour only on a
 * terminal; machines get exactly one JSON document on stdout.
 */
export class Output {
  /** Whether `--json` is on. */
  readonly json: boolean;
  /** Whether failures are also written as GitHub workflow annotations (`--format github`). */
  readonly annotations: boolean;
  /** Decorations for stdout. */
  readonly style: Style;
  /** Decorations for stderr. */
  readonly errStyle: Style;
  readonly #terminal: Terminal;

  /**
   * @param terminal - Where to write.
   * @param json - Machine output.
   * @param noColor - `--no-color` was given.
   * @param annotations - `--format github` was given.
   */
  constructor(terminal: Terminal, json: boolean, noColor: boolean, annotations = false) {
    this.#terminal = terminal;
    this.json = json;
    this.annotations = annotations;
    this.style = createStyle(!json && colourEnabled(terminal.stdout, terminal.env, noColor));
    this.errStyle = createStyle(colourEnabled(terminal.stderr, terminal.env, noColor));
  }

  /** One line for people (nothing in JSON mode). */
  line(text = ''): void {
    if (!this.json) this.#terminal.stdout.write(`${terminalText(text)}\n`);
  }

  /**
   * One workflow command of the CLI's own (`--format github`, {@link workflowCommand}): the one line written without
   * `ciCommandSafe`, which keeps a package's or plugin's text from being read as such a command.
   */
  annotation(command: string): void {
    if (!this.json) this.#terminal.stdout.write(`${terminalSafe(command)}\n`);
  }

  /** A note for people on stderr (nothing in JSON mode). */
  note(text: string): void {
    if (!this.json) this.#terminal.stderr.write(`${terminalText(text)}\n`);
  }

  /** The one JSON document of a command (nothing in human mode). Pretty on a terminal, one line otherwise. */
  data(value: Readonly<Record<string, unknown>>): void {
    if (!this.json) return;
    const pretty = this.#terminal.stdout.isTTY === true;
    this.#terminal.stdout.write(`${ciCommandSafeJson(JSON.stringify(value, null, pretty ? 2 : undefined).replace(RAW_IN_JSON, escapedCodePoint))}\n`);
  }

  /** A progress indicator on stderr, drawn only for people on a terminal. */
  spinner(): Spinner {
    return new Spinner(this.#terminal.stderr, !this.json && this.#terminal.stderr.isTTY === true);
  }

  /** Aligned columns for people, the header in bold. */
  table(header: readonly string[], rows: readonly (readonly string[])[], decorate?: (text: string, row: number, column: number) => string): void {
    // Cells hold package text (a manifest's name): one line each, so none poses as a line of the CLI's own.
    const lines = columns([header, ...rows.map((row) => row.map(oneLineField))], (text, r, c) => (r === 0 ? this.style.bold(text) : decorate ? decorate(text, r - 1, c) : text));
    for (const l of lines) this.line(l);
  }

  /**
   * A failed command: `error CODE: message`, any violations, `hint: ...`
   * and the CLI's own suggestion on stderr; or
   * `{"ok":false,"error":{...}}` on stdout. `extra` adds top-level fields
   * to the JSON document (the command's partial result). `meant` is the
   * installed name nearest a plugin or tool name that was not found.
   */
  failure(error: HostError, pluginId?: string, extra: Readonly<Record<string, unknown>> = {}, meant?: string): void {
    const suggestion = meant === undefined ? cliHint(error, pluginId) : `did you mean '${meant}'?`;
    if (this.json) {
      this.data({
        ok: false,
        ...extra,
        error: { ...error.toJSON(), ...(suggestion === undefined ? {} : { cli_hint: suggestion }), ...(meant === undefined ? {} : { did_you_mean: meant }) },
      });
      return;
    }
    if (this.annotations) this.annotation(workflowCommand('error', { title: error.code }, `${error.message}\n${error.hint}`));
    const s = this.errStyle;
    // A message or hint may quote a plugin's text over several lines (a JSON-RPC error, an isError result): indented,
    // no line of it starts at column 0, where it could pose as the CLI's own `hint:` line below.
    const out: string[] = [`${s.red(s.bold('error'))} ${s.bold(error.code)}: ${continued(error.message, MESSAGE_INDENT)}`];
    const facts = [
      error.source_error_code === undefined ? undefined : `plugin code ${oneLineField(String(error.source_error_code))}`,
      error.retryable ? 'retryable' : undefined,
      error.retry_after_ms === undefined ? undefined : `retry after ${error.retry_after_ms} ms`,
    ].filter((f) => f !== undefined);
    if (facts.length > 0) out.push(s.dim(`  (${facts.join(', ')})`));
    const violations = violationsOf(error);
    if (violations.length > 1) out.push(...this.violationLines(violations, s));
    const tail = error.details.stderr_tail;
    if (typeof tail === 'string' && tail.trim() !== '') {
      out.push(s.dim('  plugin stderr (last lines):'), ...tail.trimEnd().split('\n').slice(-10).map((l) => s.dim(`    ${l}`)));
    }
    out.push(`${s.yellow('hint')}: ${continued(error.hint, MESSAGE_INDENT)}`);
    if (suggestion !== undefined) out.push(`${s.yellow('try')}: ${suggestion}`);
    this.#terminal.stderr.write(`${terminalText(out.join('\n'))}\n`);
  }

  /** Violations as aligned rows: pointer, code, message. */
  violationLines(violations: readonly PrintedViolation[], s: Style = this.style): string[] {
    return columns(
      violations.map((v) => ['  ' + (v.pointer === '' ? '(document)' : oneLineField(v.pointer)), v.code, oneLineField(v.message)]),
      (text, _r, c) => (c === 1 ? s.red(text) : c === 0 ? s.cyan(text) : text),
    );
  }
}

/** The violation list a refusal carries in `details.violations`, if any. */
export function violationsOf(error: HostError): PrintedViolation[] {
  const list = error.details.violations;
  if (!Array.isArray(list)) return [];
  return list.flatMap((v: unknown): PrintedViolation[] => {
    if (typeof v !== 'object' || v === null) return [];
    const r = v as Record<string, unknown>;
    return [{ pointer: String(r.pointer ?? ''), code: String(r.code ?? ''), message: String(r.message ?? ''), stage: String(r.stage ?? '') }];
  });
}

// The data is a package's text: it holds no `##[` (the runner's legacy form, read anywhere in a line) either.
const escapeData = (text: string): string => ciCommandSafe(text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A'));
const escapeProperty = (text: string): string => escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** A GitHub Actions workflow command (`::error file=…,line=…::message`), escaped as the runner reads it. */
export function workflowCommand(command: 'error' | 'warning' | 'notice', properties: Readonly<Record<string, string | number | undefined>>, message: string): string {
  const props = Object.entries(properties)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${escapeProperty(String(value))}`)
    .join(',');
  return `::${command}${props === '' ? '' : ` ${props}`}::${escapeData(message)}`;
}
