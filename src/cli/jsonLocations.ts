/** A place in a text file, both counted from 1. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

const SYNTAX_POSITION = /\(line (\d+), column (\d+)\)/;

/**
 * Where a violation is in its manifest: the position of the value a JSON
 * pointer names (of its key, for an object member, so the annotation sits on
 * the line a person edits), or for a syntax error the position its message
 * states. The deepest existing parent stands in for a pointer to something
 * missing (`/requirements/canary` when `canary` is absent points at
 * `requirements`). Undefined when nothing in the text matches.
 */
export function locate(text: string, pointer: string, message: string): TextPosition | undefined {
  const stated = SYNTAX_POSITION.exec(message);
  if (stated !== null) return { line: Number(stated[1]), column: Number(stated[2]) };
  const offsets = pointerOffsets(text);
  if (offsets === undefined) return undefined;
  for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
    const offset = offsets.get(p);
    if (offset !== undefined) return positionOf(text, offset);
    if (p === '') return undefined;
  }
}

function positionOf(text: string, offset: number): TextPosition {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

const escapeToken = (token: string): string => token.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The offset of every value of a JSON text by its pointer (object members at
 * their key). Undefined when the text is not JSON: the caller then has only
 * the message to go by.
 */
function pointerOffsets(text: string): Map<string, number> | undefined {
  const offsets = new Map<string, number>();
  let at = 0;
  const space = (): void => {
    while (at < text.length && ' \t\r\n'.includes(text[at] ?? '')) at++;
  };
  const string = (): string => {
    const start = at;
    at++;
    while (at < text.length && text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (pointer: string, keyAt: number): void => {
    space();
    offsets.set(pointer, keyAt < 0 ? at : keyAt);
    const c = text[at];
    if (c === '{') {
      at++;
      space();
      while (text[at] !== '}') {
        space();
        const memberAt = at;
        const key = string();
        space();
        if (text[at] !== ':') throw new SyntaxError('expected :');
        at++;
        value(`${pointer}/${escapeToken(key)}`, memberAt);
        space();
        if (text[at] === ',') at++;
        else if (text[at] !== '}') throw new SyntaxError('expected , or }');
      }
      at++;
    } else if (c === '[') {
      at++;
      space();
      for (let index = 0; text[at] !== ']'; index++) {
        value(`${pointer}/${index}`, -1);
        space();
        if (text[at] === ',') at++;
        else if (text[at] !== ']') throw new SyntaxError('expected , or ]');
      }
      at++;
    } else if (c === '"') {
      string();
    } else {
      const literal = /^(?:-?\d[\d.eE+-]*|true|false|null)/.exec(text.slice(at, at + 64));
      if (literal === null) throw new SyntaxError('unexpected character');
      at += literal[0].length;
    }
  };
  try {
    // The text is JSON already (the validator parsed it); the scan only finds where each value starts.
    JSON.parse(text);
    value('', -1);
    return offsets;
  } catch {
    return undefined;
  }
}
