/** Which forms of a known secret value are redacted: pure logic, on top of the plugin-stderr integration test. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../etc/plugin-answers.json' with { type: 'json' };
import { hostError } from '../../src/errors/HostError.js';
import { redactJsonStrings, SecretRedactor } from '../../src/secrets/knownSecrets.js';
import { errorWithoutSecrets } from '../../src/secrets/redactedErrors.js';
import { HostEvents, type HostEventMap } from '../../src/events/HostEvents.js';
import { emitNotice } from '../../src/host/mcpSurface.js';

const VALUE = 'sk-live-0123456789abcdef';

describe('SecretRedactor', () => {
  it('finds the value base64 and base64url encoded at any byte offset inside a longer encoded stream', () => {
    const redactor = new SecretRedactor([VALUE]);
    for (let before = 0; before < 4; before++) {
      for (let after = 0; after < 4; after++) {
        const stream = Buffer.concat([randomBytes(before), Buffer.from(VALUE), randomBytes(after)]);
        for (const encoding of ['base64', 'base64url', 'hex'] as const) {
          const text = stream.toString(encoding);
          const out = redactor.redact(`x ${text} y`);
          expect(out, `${encoding} ${before}/${after}`).toContain('[redacted]');
          // What is left of the encoded stream is at most the few characters that also hold the bytes around the value.
          expect(out.replace('[redacted]', '').length, `${encoding} ${before}/${after}`).toBeLessThanOrEqual(`x  y`.length + (encoding === 'hex' ? 2 * (before + after) : Math.ceil(((before + after) * 8) / 6) + 4));
        }
      }
    }
    expect(redactor.redact(Buffer.from(VALUE).toString('hex').toUpperCase())).toBe('[redacted]');
    expect(redactor.redact(encodeURIComponent(`a b ${VALUE}`))).toBe('a%20b%20[redacted]');
  });

  it('redacts the first characters of a value where the host cut text short inside it, and only there', () => {
    const redactor = new SecretRedactor([VALUE]);
    for (let kept = 4; kept < VALUE.length; kept++) {
      const head = VALUE.slice(0, kept);
      expect(redactor.redact(`nnn${head} [line truncated]`), `${kept}`).toBe('nnn[redacted] [line truncated]');
      expect(redactor.redact(`nnn${head}…`), `${kept}`).toBe('nnn[redacted]…');
      expect(redactor.redactCutEnd(`nnn${head}`), `${kept}`).toBe('nnn[redacted]');
      // Not cut: the same characters are ordinary text.
      expect(redactor.redact(`nnn${head}`), `${kept}`).toBe(`nnn${head}`);
    }
    // A byte cut inside a multi-byte character decodes as U+FFFD before the mark.
    expect(redactor.redact(`x ${VALUE.slice(0, 9)}\uFFFD [line truncated]`)).toBe('x [redacted] [line truncated]');
    // Its encoded forms too, and fewer than 4 characters are left alone (they cannot be told from text).
    expect(redactor.redact(`b64=${Buffer.from(VALUE).toString('base64').slice(0, 12)}…`)).toBe('b64=[redacted]…');
    expect(redactor.redact(`x ${VALUE.slice(0, 3)}…`)).toBe(`x ${VALUE.slice(0, 3)}…`);
    expect(redactor.redact(`${VALUE} and ${VALUE.slice(0, 6)}…`)).toBe('[redacted] and [redacted]…');
  });

  it('a call error: a raw line the host cut inside a value loses the value\'s first characters', () => {
    const redactor = new SecretRedactor([VALUE]);
    const line = `${'n'.repeat(2040)}${VALUE}`;
    const error = hostError('PLUGIN_INVALID_JSON', 'plugin wrote a line that is not JSON', { details: { raw_line: line.slice(0, 2048), raw_line_truncated: true, raw_line_length: line.length } });
    const redacted = errorWithoutSecrets(error, redactor);
    expect(redacted.details['raw_line']).toBe(`${'n'.repeat(2040)}[redacted]`);
    expect(JSON.stringify(redacted)).not.toContain(VALUE.slice(0, 8));
    // An uncut raw line is only redacted where a whole form is.
    const whole = errorWithoutSecrets(hostError('PLUGIN_INVALID_JSON', 'x', { details: { raw_line: `n ${VALUE.slice(0, 8)}` } }), redactor);
    expect(whole.details['raw_line']).toBe(`n ${VALUE.slice(0, 8)}`);
  });

  it('a call error: the start of a value V8 quotes from a line JSON.parse failed on is redacted from the message and reason', () => {
    const redactor = new SecretRedactor([VALUE]);
    for (const line of [`${VALUE} is my key`, `{"a": ${VALUE}}`, `[1,2,3,4,5,6,7,8,9,10,11,12, ${VALUE}]`]) {
      let reason = '';
      try {
        JSON.parse(line);
      } catch (e) {
        reason = (e as Error).message;
      }
      expect(reason).toContain(VALUE.slice(0, 6));
      const error = hostError('PLUGIN_MALFORMED_RESPONSE', `plugin sent an invalid response: ${reason}`, { details: { reason, raw_line: line } });
      const redacted = errorWithoutSecrets(error, redactor);
      expect(JSON.stringify([redacted.message, redacted.details]), line).not.toContain(VALUE.slice(0, 6));
      expect(redacted.message).toMatch(/\[redacted\]"\.\.\. is not valid JSON$/);
    }
    // A quote that does not end in a value's start is left as it is.
    const other = hostError('PLUGIN_INVALID_JSON', `plugin wrote a line that is not JSON: Unexpected token 'n', "nnnnnnnnnnn"... is not valid JSON`);
    expect(errorWithoutSecrets(other, redactor)).toBe(other);
  });

  it('values that share a prefix, hold one another or overlap: each is replaced whole, and nothing of either is left', () => {
    const long = 'sk-live-0123456789abcdef';
    const short = 'sk-live-0123';
    const inner = 'live-0123456789';
    expect(new SecretRedactor([short, long]).redact(`a ${long} b ${short}9 c`)).toBe('a [redacted] b [redacted]9 c');
    expect(new SecretRedactor([inner]).redact(`a ${long} b`)).toBe('a sk-[redacted]abcdef b');
    expect(new SecretRedactor([inner, long]).redact(`a ${long} b`)).toBe('a [redacted] b');
    // Overlapping: the first ends inside the second, which runs on.
    expect(new SecretRedactor(['abcd1234', 'cd1234efgh']).redact('x abcd1234efgh y')).toBe('x [redacted] y');
    // 100 values with one vendor prefix, of several lengths, in text repeating the prefix.
    const values = Array.from({ length: 100 }, (_, i) => `sk-live-${randomBytes(8 + (i % 5)).toString('hex')}`);
    const redactor = new SecretRedactor(values);
    const text = values.map((value) => `sk-live-sk-live-${value}sk-live-`).join(' ');
    const out = redactor.redact(text);
    for (const value of values) expect(out).not.toContain(value.slice(8));
    expect(out).toBe(values.map(() => 'sk-live-sk-live-[redacted]sk-live-').join(' '));
  });

  it('finds a value escaped or percent-encoded as other languages write it (Python quote, quote_plus, json.dumps; PHP json_encode)', () => {
    // What Python itself writes for each value, so the forms are checked against the encoders and not against themselves.
    const values = ['wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', "pä ss(w)ord!~*'x/ü-123"];
    const python = (code: string, value: string): string =>
      execFileSync('python3', ['-c', `import json, re, sys, urllib.parse; sys.stdout.write(${code})`, value], { encoding: 'utf8' });
    const redactor = new SecretRedactor(values);
    for (const value of values) {
      const written = [
        python('urllib.parse.quote(sys.argv[1])', value),
        python('urllib.parse.quote_plus(sys.argv[1])', value),
        // Lower-case hex, as some encoders write it.
        python("re.sub('%[0-9A-F]{2}', lambda m: m.group(0).lower(), urllib.parse.quote(sys.argv[1]))", value),
        python('json.dumps(sys.argv[1])[1:-1]', value),
        JSON.stringify(value).slice(1, -1).replace(/\//g, '\\/'),
        new URLSearchParams([['', value]]).toString().slice(1),
      ];
      for (const form of written) expect(redactor.redact(`GET /api?key=${form}&q=1`), form).toBe('GET /api?key=[redacted]&q=1');
    }
  });

  it('leaves values too short to tell from text alone, and encodes only values long enough', () => {
    expect(new SecretRedactor(['abc']).redact('abc abcd')).toBe('abc abcd');
    const short = new SecretRedactor(['abcd12']);
    expect(short.redact('abcd12')).toBe('[redacted]');
    expect(short.redact(Buffer.from('abcd12').toString('base64'))).toBe(Buffer.from('abcd12').toString('base64'));
    expect(SecretRedactor.none.redact(VALUE)).toBe(VALUE);
  });

  it('redacts every one of 1,000 known values, as written and in every encoding, with text between them', () => {
    const values = Array.from({ length: 1000 }, (_, i) => `${i}-${randomBytes(12).toString('base64url')}`);
    const redactor = new SecretRedactor(values);
    const encodings = (value: string): string[] => {
      const bytes = Buffer.from(value);
      return [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
    };
    const text = values.map((value) => encodings(value).map((form) => `<${form}>`).join(' ')).join('\n');
    const out = redactor.redact(text).split('\n');
    expect(out).toHaveLength(values.length);
    // A base64 copy keeps at most the last characters that also hold the bits after the value, and its padding.
    for (const line of out) for (const piece of line.split(' ')) expect(piece).toMatch(/^<\[redacted\][A-Za-z0-9_=-]{0,3}>$/);
  });

  it('a log value: keys and strings at every depth a plugin line may nest to are redacted', () => {
    const redactor = new SecretRedactor([VALUE]);
    let deep: unknown = { token: VALUE };
    for (let i = 1; i < pluginAnswerLimits.maxNestingDepth; i++) deep = [deep];
    const out = JSON.stringify(redactJsonStrings({ config: deep, byKey: { [VALUE]: true } }, redactor));
    expect(out).not.toContain(VALUE);
    expect(out).toContain('"[redacted]":true');
  });

  it('a log event: its logger name is redacted too', () => {
    const events = new HostEvents();
    const logs: HostEventMap['log'][] = [];
    events.on('log', (e) => logs.push(e));
    emitNotice(events, 'p', { kind: 'log', level: 'info', logger: `client-${VALUE}`, data: 'x' }, new SecretRedactor([VALUE]));
    expect(logs).toEqual([{ plugin_id: 'p', level: 'info', logger: 'client-[redacted]', data: 'x' }]);
  });
});
