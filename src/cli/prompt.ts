import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import type { Terminal } from './Output.js';
import { oneLineField, terminalText } from './style.js';

/**
 * Asks one question on the terminal (prompt on stderr, answer from stdin).
 * `hidden` keeps the answer off the screen: readline puts the terminal in
 * raw mode, so the only echo is readline's own, which is swallowed here.
 */
export async function ask(terminal: Terminal, question: string, options: { readonly hidden?: boolean } = {}): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      if (!muted) terminal.stderr.write(chunk.toString());
      done();
    },
  });
  const rl = createInterface({ input: terminal.stdin, output, terminal: terminal.stdin.isTTY === true });
  try {
    // Questions quote a package's text (`remove` its version, which a manifest spells as it likes): written raw, its
    // escape sequences could clear the question and show another in its place, and a line break pose as a line of the
    // CLI's. Readline's own cursor sequences are written after this and pass.
    const answer = rl.question(terminalText(oneLineField(question)));
    muted = options.hidden === true;
    return (await answer).trim();
  } finally {
    rl.close();
    if (muted) terminal.stderr.write('\n');
  }
}

/** A yes/no question; anything but y/yes is no. */
export async function confirm(terminal: Terminal, question: string): Promise<boolean> {
  return /^y(es)?$/i.test(await ask(terminal, `${question} [y/N] `));
}

/** Reads all of stdin as text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
