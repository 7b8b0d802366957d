import { describe, expect, it } from 'vitest';
import { locate } from '../../src/cli/jsonLocations.js';

const TEXT = ['{', '  "plugin_id": "Bad_Id",', '  "tools": [', '    { "name": "a" },', '    { "name": "b/c" }', '  ],', '  "x~y": 1', '}'].join('\n');

describe('locate: where a JSON pointer is in the manifest text', () => {
  it('an object member is found at its key', () => {
    expect(locate(TEXT, '/plugin_id', 'bad id')).toEqual({ line: 2, column: 3 });
  });

  it('an array element and a member inside it', () => {
    expect(locate(TEXT, '/tools/1', 'x')).toEqual({ line: 5, column: 5 });
    expect(locate(TEXT, '/tools/1/name', 'x')).toEqual({ line: 5, column: 7 });
  });

  it('escaped reference tokens (RFC 6901)', () => {
    expect(locate(TEXT, '/x~0y', 'x')).toEqual({ line: 7, column: 3 });
  });

  it('a missing member points at its deepest existing parent; the document at its start', () => {
    expect(locate(TEXT, '/tools/0/description', 'x')).toEqual({ line: 4, column: 5 });
    expect(locate(TEXT, '', 'x')).toEqual({ line: 1, column: 1 });
  });

  it('a syntax error is placed where its message says, whatever the text', () => {
    expect(locate('{ "a": 1 "b": 2 }', '', 'manifest is not valid JSON (line 1, column 10): Expected comma')).toEqual({ line: 1, column: 10 });
  });

  it('text that is not JSON (a TOML manifest) has no positions for pointers', () => {
    expect(locate('[plugin]\nname = "x"\n', '/plugin/name', 'x')).toBeUndefined();
  });
});
