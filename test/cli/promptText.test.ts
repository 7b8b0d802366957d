/**
 * A question the CLI asks on the terminal shows a package's text without its escape sequences and line breaks
 * (review s33 R9 F2): `remove` asked `Remove <id> <version>?` with the manifest's version written raw, so a version
 * holding `\r\u001b[2K\u001b[1A` cleared the question and showed another in its place.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm } from '../../src/cli/prompt.js';

function terminal(answer: string): { terminal: Parameters<typeof confirm>[0]; shown: () => string } {
  let text = '';
  const stdin = new PassThrough();
  stdin.end(answer);
  const stream = { write: (chunk: string) => (text += chunk) };
  return { terminal: { stdin, stdout: stream, stderr: stream, env: {} }, shown: () => text };
}

describe('confirm', () => {
  it('shows a quoted version without its escape sequences or line breaks, and still reads the answer', async () => {
    const t = terminal('y\n');
    const version = '0.1.0?\r\u001b[2K\u001b[1AKeep verpkg installed\nanswer y to keep it';
    expect(await confirm(t.terminal, `Remove verpkg ${version}? Its data directory and credentials are kept.`)).toBe(true);
    expect(t.shown()).not.toMatch(/[\u001b\r\n]/);
    expect(t.shown()).toBe('Remove verpkg 0.1.0? Keep verpkg installed answer y to keep it? Its data directory and credentials are kept. [y/N] ');
  });
});
