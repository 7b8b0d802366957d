/**
 * Defensive reads of a parsed document. The checks run on documents that
 * may also have structural violations, so none of them assumes a type.
 */
import type { ManifestForm } from './model.js';

/** A JSON object (not an array, not null). */
export type JsonRecord = Record<string, unknown>;

/** Whether a value is a JSON object. */
export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `key` is an own property of `o`, never an inherited one. */
export function has(o: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, key);
}

/** An own property of a record, never an inherited one. */
export function own(record: unknown, key: string): unknown {
  return isRecord(record) && Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/** An own string property, or `undefined`. */
export function ownString(record: unknown, key: string): string | undefined {
  const v = own(record, key);
  return typeof v === 'string' ? v : undefined;
}

/** An own boolean property, or `undefined`. */
export function ownBoolean(record: unknown, key: string): boolean | undefined {
  const v = own(record, key);
  return typeof v === 'boolean' ? v : undefined;
}

/** An own finite number property, or `undefined`. */
export function ownNumber(record: unknown, key: string): number | undefined {
  const v = own(record, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The string items of an own array property, with their indices. */
export function ownStrings(record: unknown, key: string): Array<{ index: number; value: string }> {
  const v = own(record, key);
  if (!Array.isArray(v)) return [];
  const out: Array<{ index: number; value: string }> = [];
  v.forEach((item, index) => {
    if (typeof item === 'string') out.push({ index, value: item });
  });
  return out;
}

/** One tool record of a manifest with the pointer tokens that lead to it. */
export interface ToolEntry {
  /** Tokens of the tool record's JSON pointer. */
  readonly at: readonly (string | number)[];
  /** The tool record. */
  readonly tool: JsonRecord;
}

/** Where each form keeps its tools. */
export const TOOLS_PATH: Readonly<Record<ManifestForm, readonly string[]>> = {
  'gum-json': ['advertised_tools'],
  'gum-toml': ['tools'],
  'open-discovery': ['capabilities', 'tools'],
};

/** The tool records of a document (non-object entries skipped). */
export function toolEntries(doc: unknown, form: ManifestForm): ToolEntry[] {
  const path = TOOLS_PATH[form];
  let node: unknown = doc;
  for (const key of path) node = own(node, key);
  if (!Array.isArray(node)) return [];
  const out: ToolEntry[] = [];
  node.forEach((tool, index) => {
    if (isRecord(tool)) out.push({ at: [...path, index], tool });
  });
  return out;
}

/** A tool's unprefixed name as each form spells it. */
export function toolNameOf(tool: JsonRecord, form: ManifestForm): { key: string; name: string | undefined } {
  if (form !== 'gum-toml') return { key: 'name', name: ownString(tool, 'name') };
  if (ownString(tool, 'backend_kind') === 'grpc-plugin') {
    const op = ownString(tool, 'op_id');
    return { key: 'op_id', name: op === undefined ? undefined : op.slice(op.lastIndexOf('.') + 1) };
  }
  return { key: 'tool_name', name: ownString(tool, 'tool_name') };
}
