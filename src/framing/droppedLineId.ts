/**
 * The JSON-RPC id on a line dropped for crossing the frame cap, read from
 * the ends the line reader keeps: how a protocol fails only the one request
 * (or answer) the line carried.
 */
import type { OversizeLine } from './LineReader.js';

// The id as the last member of the line's top-level object (the closing brace follows it, so it cannot be nested),
// or as its first member (after "jsonrpc"): how the TypeScript and Python SDKs write requests and answers.
const ID_VALUE = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);
const ID_AT_START = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}\s*,`);

/** The id of the message on a dropped line, when its ends show it. */
export function droppedLineId(line: OversizeLine): string | number | undefined {
  const found = ID_AT_END.exec(line.tail) ?? ID_AT_START.exec(line.head);
  if (found?.[1] === undefined) return undefined;
  try {
    const id: unknown = JSON.parse(found[1]);
    return typeof id === 'string' || typeof id === 'number' ? id : undefined;
  } catch {
    return undefined;
  }
}
