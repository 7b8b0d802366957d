/**
 * Writes the reference pages that are derived from the code's own data, so
 * that they cannot drift from it:
 *
 * - docs/errors.md from the error registry (src/errors/registry.ts);
 * - docs/manifest-reference.md from the JSON Schemas under etc/schemas/.
 *
 * `npx tsx scripts/gen-docs.ts` rewrites both pages; with `--check` it writes
 * nothing and exits 1 when a checked-in page differs from what it would write.
 * test/docs/generatedDocs.test.ts runs the same renderers in memory.
 *
 * The schema renderer understands exactly the keywords our schemas use and
 * stops with an error on any other one: a schema change that the reference
 * could not show must change this script too, instead of silently leaving
 * a rule out of the page.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ERROR_CODES,
  spellingOf,
  type ErrorCodeInfo,
  type HostErrorCode,
  type ProtocolSpellings,
} from '../src/errors/registry.js';

/** The command that regenerates the pages; their header lines name it. */
export const GENERATE_COMMAND = 'npx tsx scripts/gen-docs.ts';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** One generated page: its path relative to the repository root and its full text. */
export interface GeneratedDoc {
  readonly path: string;
  readonly content: string;
}

/** Every generated page, rendered from the registry and the schemas under `root`. */
export function renderGeneratedDocs(root: string = REPO_ROOT): GeneratedDoc[] {
  return [
    { path: 'docs/errors.md', content: renderErrorsReference() },
    { path: 'docs/manifest-reference.md', content: renderManifestReference(loadSchemaFiles(root)) },
  ];
}

function headerLine(source: string): string {
  return `<!-- Generated from ${source} by "${GENERATE_COMMAND}". Do not edit by hand: change the source and run the command again. -->`;
}

// ---------------------------------------------------------------------------
// Markdown helpers

/** A code span that survives backticks in its text. */
function code(text: string): string {
  const longestRun = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(longestRun + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** Text made safe for one table cell: no line breaks, no raw pipes, no control characters. */
function cell(text: string): string {
  return text
    .replace(/\r?\n/g, ' ')
    .replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/\|/g, '\\|');
}

function tableRow(cells: readonly string[]): string {
  return `| ${cells.map(cell).join(' | ')} |`;
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [tableRow(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(tableRow)];
}

/** The anchor GitHub gives a heading. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

function finish(lines: readonly string[]): string {
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}

// ---------------------------------------------------------------------------
// docs/errors.md

type Stage = ErrorCodeInfo['stage'];
type Protocol = keyof ProtocolSpellings;

const STAGES: Readonly<Record<Stage, { readonly title: string; readonly intro: string }>> = {
  install: {
    title: 'Install stage',
    intro:
      'Raised while a manifest is validated, a package is unpacked and verified, or a plugin is bound, ' +
      'recorded or loaded.',
  },
  runtime: {
    title: 'Runtime stage',
    intro:
      'Raised when an installed plugin is looked up, configured or called, including the failures a plugin ' +
      'reports about its own work, which the error mapper translates (see [error-mapping.md](error-mapping.md)).',
  },
  protocol: {
    title: 'Protocol stage',
    intro:
      'Raised when a plugin process breaks the contract of its wire protocol: it does not start, does not ' +
      'answer in time, dies, or answers with something the protocol does not allow.',
  },
  host: {
    title: 'Host stage',
    intro:
      "Conditions of the host itself rather than of a plugin: the profile's files, the cross-process lock, " +
      'the file system and the options the host was given.',
  },
};

const PROTOCOLS: readonly { readonly protocol: Protocol; readonly label: string; readonly word: string }[] = [
  { protocol: 'handshake', label: 'handshake', word: 'failure class' },
  { protocol: 'ndjson', label: 'mcptest (ndjson)', word: 'host failure' },
  { protocol: 'jsonrpc', label: 'JSON-RPC', word: 'code' },
];

const STAGE_ORDER = Object.keys(STAGES) as Stage[];

/** Every code, by stage and then in registry order. */
const ALL_CODES = (Object.keys(ERROR_CODES) as HostErrorCode[]).sort(
  (a, b) => STAGE_ORDER.indexOf(ERROR_CODES[a].stage) - STAGE_ORDER.indexOf(ERROR_CODES[b].stage),
);

function spelled(errorCode: HostErrorCode, protocol: Protocol): string | undefined {
  const word = spellingOf(errorCode, protocol);
  return word === undefined ? undefined : String(word);
}

function codeLink(errorCode: HostErrorCode): string {
  return `[${code(errorCode)}](#${anchorOf(errorCode)})`;
}

/** Each word of a protocol with the codes that carry it, in registry order. */
function wordsOf(protocol: Protocol): Map<string, HostErrorCode[]> {
  const words = new Map<string, HostErrorCode[]>();
  for (const errorCode of ALL_CODES) {
    const word = spelled(errorCode, protocol);
    if (word !== undefined) words.set(word, [...(words.get(word) ?? []), errorCode]);
  }
  return words;
}

function vocabularySection(): string[] {
  const handshakeWords = wordsOf('handshake');
  const ndjsonWords = wordsOf('ndjson');
  const example = ALL_CODES.find((c) => spelled(c, 'handshake') !== undefined && spelled(c, 'ndjson') !== undefined);
  const jsonrpcExample = ALL_CODES.find((c) => spelled(c, 'jsonrpc') !== undefined);
  const unspelled = ALL_CODES.find((c) => ERROR_CODES[c].spellings === undefined);
  const shared = [...handshakeWords].find(([, codes]) => codes.length > 1);
  const lines = [
    '## One code, three protocol vocabularies',
    '',
    'Inside the library there is one vocabulary: the host codes on this page. Two of the protocols the host',
    'runs came with failure names of their own, and plugins and tools written for those protocols know',
    'their failures by those names:',
    '',
    `- **handshake**: the one-shot core/plugin runtime sorts every failure into one of ${handshakeWords.size}`,
    '  classes (`launch_failed`, `timeout`, …). The handshake shape puts the class in `details.failure_class`.',
    `- **mcptest (ndjson)**: the mcptest subprocess protocol names ${ndjsonWords.size} host failures`,
    '  (`SpawnFailed`, `Timeout`, …). The ndjson-rpc shape puts the name in `details.protocol_code`.',
    "- **JSON-RPC**: the ndjson-rpc wire borrows JSON-RPC 2.0's reserved integer codes (`-32700` for a line",
    '  that is not JSON, and so on); where one fits, the shape adds it as `details.jsonrpc_code`.',
    '',
    'These words are not codes of their own. The registry keeps each one as a *spelling* attached to the',
    'host code it corresponds to, and `spellingOf(code, protocol)` looks a spelling up, with `protocol` one of',
    "`'handshake'`, `'ndjson'` and `'jsonrpc'`.",
  ];
  if (example !== undefined && jsonrpcExample !== undefined && unspelled !== undefined) {
    lines.push(
      `For example, \`spellingOf('${example}', 'handshake')\` is \`'${spelled(example, 'handshake') ?? ''}'\`,`,
      `\`spellingOf('${jsonrpcExample}', 'jsonrpc')\` is \`${spelled(jsonrpcExample, 'jsonrpc') ?? ''}\`, and`,
      `\`spellingOf('${unspelled}', 'handshake')\` is \`undefined\` because that protocol has no word for it.`,
    );
  }
  lines.push(
    '',
    'The lookup runs from code to word only.',
    ...(shared === undefined
      ? []
      : [`One word can stand for several codes (the handshake runtime calls ${shared[1].map(code).join(' and ')} both ${code(shared[0])}),`]),
    'so a word does not identify a failure: match on `error.code` and treat the spelling as a label for logs',
    'and for tools that already speak the protocol.',
  );
  return lines;
}

function glanceSection(): string[] {
  const rows = ALL_CODES.map((errorCode) => {
    const info: ErrorCodeInfo = ERROR_CODES[errorCode];
    return [
      codeLink(errorCode),
      info.stage,
      info.retryable ? 'yes' : 'no',
      ...PROTOCOLS.map(({ protocol }) => {
        const word = spelled(errorCode, protocol);
        return word === undefined ? '—' : code(word);
      }),
    ];
  });
  return [
    '## At a glance',
    '',
    ...table(['code', 'stage', 'retryable by default', ...PROTOCOLS.map((p) => p.label)], rows),
  ];
}

function reverseIndexSection(): string[] {
  const lines = [
    '## From a protocol word to the host code',
    '',
    'For reading logs and protocol traces: the host codes that each protocol word stands for.',
  ];
  for (const { protocol, label, word } of PROTOCOLS) {
    const words = wordsOf(protocol);
    const rows = [...words].map(([w, codes]) => [code(w), codes.map(codeLink).join(', ')]);
    lines.push('', `### ${label}`, '', ...table([`${label} ${word}`, 'host code'], rows));
  }
  return lines;
}

function codeSection(errorCode: HostErrorCode): string[] {
  const info: ErrorCodeInfo = ERROR_CODES[errorCode];
  const spellings = PROTOCOLS.flatMap(({ protocol, label }) => {
    const word = spelled(errorCode, protocol);
    return word === undefined ? [] : [`${label} ${code(word)}`];
  });
  return [
    `### ${code(errorCode)}`,
    '',
    info.meaning,
    '',
    `- **Stage:** ${info.stage}`,
    `- **Retryable by default:** ${info.retryable ? 'yes' : 'no'}`,
    `- **What to do:** ${info.hint}`,
    `- **Spellings:** ${spellings.length === 0 ? 'none; every protocol reports it by this code alone' : spellings.join(', ')}`,
  ];
}

/** The text of docs/errors.md. */
export function renderErrorsReference(): string {
  const lines = [
    headerLine('src/errors/registry.ts'),
    '# Error codes',
    '',
    `Every expected failure the library reports is a \`HostError\` whose \`code\` is one of the ${ALL_CODES.length}`,
    'stable codes on this page. Nothing in the public API throws for these: they come back as the `err` side',
    'of a `Result`. Match on `code`; the message is for people and may change.',
    '',
    'Besides `code` and `message`, an error carries `hint` (what to do), `retryable` (whether the same',
    'request may be sent again unchanged) and `details` (structured facts). The registry gives the default',
    '`hint` and `retryable` listed here; a particular error may override either, for example when a plugin',
    "says its own rate-limit failure is not worth retrying, so read them from the error, not from this page.",
    '',
    `This page is generated from the registry in \`src/errors/registry.ts\` by \`${GENERATE_COMMAND}\`; the test`,
    'suite fails when it is out of date.',
    '',
    ...vocabularySection(),
    '',
    ...glanceSection(),
    '',
    ...reverseIndexSection(),
  ];
  for (const stage of STAGE_ORDER) {
    const { title, intro } = STAGES[stage];
    lines.push('', `## ${title}`, '', intro);
    for (const errorCode of ALL_CODES.filter((c) => ERROR_CODES[c].stage === stage)) lines.push('', ...codeSection(errorCode));
  }
  return finish(lines);
}

// ---------------------------------------------------------------------------
// docs/manifest-reference.md

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** One schema file under etc/schemas/, with its path relative to the repository root. */
export interface SchemaFile {
  readonly path: string;
  readonly schema: JsonObject;
}

const SCHEMA_DIR = 'etc/schemas';

/** Sections come in this order; a schema not listed here follows, by path. */
const SCHEMA_ORDER = [
  'gum-manifest-v1.schema.json',
  'gum-manifest-toml.schema.json',
  'mcp-plugin.schema.json',
  'handshake-manifest.schema.json',
  'catalog/plugin-catalog.schema.json',
  'catalog/plugins-lock.schema.json',
  'catalog/plugin-state.schema.json',
];

const CATALOG_NOTE =
  'Written by the host into each profile directory, never by plugin authors. How the three catalog files ' +
  'change together is described in [install-safety.md](install-safety.md).';

/** What a reader needs to know about a schema that the schema itself cannot say. */
const SCHEMA_NOTES: Readonly<Record<string, string>> = {
  'gum-manifest-v1.schema.json':
    'The `manifest.json` at the root of a GUM plugin package. The order of checks and the code each ' +
    'violation gets are in [manifest.md](manifest.md).',
  'gum-manifest-toml.schema.json':
    'Paths address the parsed TOML document: `/plugin/name` is `name` in the `[plugin]` table and ' +
    '`/tools/*/op_id` is `op_id` in one `[[tools]]` entry. The order of checks is in [manifest.md](manifest.md).',
  'mcp-plugin.schema.json':
    'The `mcp-plugin.json` of an Open Discovery ESM plugin; how such a plugin loads is in ' +
    '[protocols-esm.md](protocols-esm.md).',
  'handshake-manifest.schema.json':
    'Not a file: the `manifest` object a handshake-shape plugin sends in its handshake response ' +
    '(see [protocols-ndjson-and-handshake.md](protocols-ndjson-and-handshake.md)).',
  'catalog/plugin-catalog.schema.json': CATALOG_NOTE,
  'catalog/plugins-lock.schema.json': CATALOG_NOTE,
  'catalog/plugin-state.schema.json': CATALOG_NOTE,
};

const DIALECTS: Readonly<Record<string, string>> = {
  'https://json-schema.org/draft/2020-12/schema': 'JSON Schema 2020-12',
  'http://json-schema.org/draft-07/schema#': 'JSON Schema draft-07',
};

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function schemaRank(path: string): number {
  const rank = SCHEMA_ORDER.indexOf(path.slice(SCHEMA_DIR.length + 1));
  return rank === -1 ? SCHEMA_ORDER.length : rank;
}

/** Every `*.json` under etc/schemas/, in section order. */
export function loadSchemaFiles(root: string = REPO_ROOT): SchemaFile[] {
  const names = readdirSync(join(root, SCHEMA_DIR), { recursive: true, encoding: 'utf8' });
  return names
    .filter((name) => name.endsWith('.json'))
    .map((name) => `${SCHEMA_DIR}/${name.split('\\').join('/')}`)
    .sort((a, b) => schemaRank(a) - schemaRank(b) || a.localeCompare(b))
    .map((path) => {
      const schema = JSON.parse(readFileSync(join(root, path), 'utf8')) as Json;
      if (!isObject(schema)) throw new Error(`gen-docs: ${path} is not a JSON object`);
      return { path, schema };
    });
}

/** A subschema together with the URI its `$ref`s resolve against. */
interface Located {
  readonly schema: Json;
  readonly base: string;
}

/** A `then`/`else` rule: when `when` holds, `required` must be present. */
interface Conditional {
  readonly when: string;
  readonly required: readonly string[];
}

/** Everything that applies at one place of the document, after `$ref` and `allOf` are merged. */
interface Flat {
  types: string[];
  readonly keywords: Map<string, Json>;
  description: string | undefined;
  title: string | undefined;
  /** Resolved `$ref` targets (document URI `#` pointer), outermost first. */
  readonly refs: string[];
  readonly properties: Map<string, Located[]>;
  readonly required: Set<string>;
  readonly conditionals: Conditional[];
  readonly items: Located[];
  readonly values: Located[];
  readonly propertyNames: Located[];
  closed: boolean;
}

const CONSTRAINT_KEYWORDS = new Set([
  'const', 'enum', 'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'default',
]);
const IGNORED_KEYWORDS = new Set(['$schema', '$id', '$comment', '$defs', 'definitions', 'examples']);

function unsupported(where: string, what: string): Error {
  return new Error(`gen-docs: ${what} at ${where} is not supported by the reference generator; extend scripts/gen-docs.ts`);
}

/** Resolves `$ref`s across the schema files by their `$id`. */
class SchemaIndex {
  private readonly documents = new Map<string, JsonObject>();
  /** Targets resolved since the last `startSection`, to find definitions no field uses. */
  readonly visited = new Set<string>();

  constructor(files: readonly SchemaFile[]) {
    for (const file of files) this.documents.set(documentId(file), file.schema);
  }

  resolve(ref: string, base: string, where: string): Located & { readonly target: string } {
    const url = new URL(ref, base);
    const hash = url.hash;
    url.hash = '';
    const document = this.documents.get(url.href);
    if (document === undefined) throw unsupported(where, `$ref ${ref} to a schema outside ${SCHEMA_DIR}`);
    let node: Json = document;
    const pointer = decodeURIComponent(hash.replace(/^#/, ''));
    for (const token of pointer.split('/').slice(1)) {
      const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
      const next: Json | undefined = isObject(node) ? node[key] : undefined;
      if (next === undefined) throw new Error(`gen-docs: $ref ${ref} at ${where} points at nothing`);
      node = next;
    }
    const target = `${url.href}#${pointer}`;
    this.visited.add(target);
    return { schema: node, base: url.href, target };
  }
}

function documentId(file: SchemaFile): string {
  const id = file.schema.$id;
  const url = new URL(typeof id === 'string' ? id : pathToFileURL(resolve(REPO_ROOT, file.path)).href);
  url.hash = '';
  return url.href;
}

function stringList(value: Json, where: string, keyword: string): string[] {
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) {
    throw unsupported(where, `non-string ${keyword}`);
  }
  return value;
}

function flatten(parts: readonly Located[], index: SchemaIndex, where: string): Flat {
  const flat: Flat = {
    types: [],
    keywords: new Map(),
    description: undefined,
    title: undefined,
    refs: [],
    properties: new Map(),
    required: new Set(),
    conditionals: [],
    items: [],
    values: [],
    propertyNames: [],
    closed: false,
  };
  for (const part of parts) absorb(flat, part, index, where);
  return flat;
}

/**
 * Adds one subschema to `flat`. Keywords written beside a `$ref` are taken
 * before the referenced ones, so a field's own description wins over the
 * shared definition's.
 */
function absorb(flat: Flat, { schema, base }: Located, index: SchemaIndex, where: string): void {
  if (schema === true) return;
  if (!isObject(schema)) throw unsupported(where, `the schema ${JSON.stringify(schema)}`);
  const later: Located[] = [];
  for (const [keyword, value] of Object.entries(schema)) {
    if (IGNORED_KEYWORDS.has(keyword) || keyword === 'then' || keyword === 'else') continue;
    if (CONSTRAINT_KEYWORDS.has(keyword)) {
      if (!flat.keywords.has(keyword)) flat.keywords.set(keyword, value);
      continue;
    }
    switch (keyword) {
      case '$ref': {
        if (typeof value !== 'string') throw unsupported(where, 'a non-string $ref');
        const target = index.resolve(value, base, where);
        if (flat.refs.includes(target.target)) throw unsupported(where, `the recursive $ref ${value}`);
        flat.refs.push(target.target);
        later.push(target);
        break;
      }
      case 'allOf':
        if (!Array.isArray(value)) throw unsupported(where, 'a non-array allOf');
        for (const sub of value) {
          if (isObject(sub) && 'if' in sub) flat.conditionals.push(...conditionalsOf(sub, where));
          else later.push({ schema: sub, base });
        }
        break;
      case 'if':
        flat.conditionals.push(...conditionalsOf(schema, where));
        break;
      case 'type':
        if (flat.types.length === 0) flat.types = typeof value === 'string' ? [value] : stringList(value, where, 'type');
        break;
      case 'description':
        if (typeof value === 'string') flat.description ??= value;
        break;
      case 'title':
        if (typeof value === 'string') flat.title ??= value;
        break;
      case 'required':
        for (const name of stringList(value, where, 'required')) flat.required.add(name);
        break;
      case 'properties':
        if (!isObject(value)) throw unsupported(where, 'a non-object properties');
        for (const [name, sub] of Object.entries(value)) flat.properties.set(name, [...(flat.properties.get(name) ?? []), { schema: sub, base }]);
        break;
      case 'additionalProperties':
        if (value === false) flat.closed = true;
        else if (value !== true) flat.values.push({ schema: value, base });
        break;
      case 'propertyNames':
        flat.propertyNames.push({ schema: value, base });
        break;
      case 'items':
        if (!isObject(value)) throw unsupported(where, 'tuple-form items');
        flat.items.push({ schema: value, base });
        break;
      default:
        throw unsupported(where, `the keyword "${keyword}"`);
    }
  }
  for (const part of later) absorb(flat, part, index, where);
}

/** One test inside an `if`: a field is present, or (when present) has one of some values. */
interface Clause {
  readonly field: string;
  readonly values: readonly Json[] | undefined;
  readonly mustBePresent: boolean;
}

function clausesOf(schema: JsonObject, where: string): { clauses: Clause[]; negated: JsonObject[] } {
  const required = new Set(schema.required === undefined ? [] : stringList(schema.required, where, 'required'));
  const clauses: Clause[] = [];
  const negated: JsonObject[] = [];
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === 'type' && value === 'object') continue;
    if (keyword === 'required') continue;
    if (keyword === 'not' && isObject(value)) {
      negated.push(value);
      continue;
    }
    if (keyword !== 'properties' || !isObject(value)) throw unsupported(where, `"${keyword}" in an if condition`);
    for (const [field, test] of Object.entries(value)) {
      if (!isObject(test)) throw unsupported(where, `the condition on ${field}`);
      const values = 'const' in test ? [test.const ?? null] : Array.isArray(test.enum) ? test.enum : undefined;
      if (values === undefined || Object.keys(test).length !== 1) throw unsupported(where, `the condition on ${field}`);
      clauses.push({ field, values, mustBePresent: required.has(field) });
    }
  }
  for (const field of required) {
    if (!clauses.some((c) => c.field === field)) clauses.push({ field, values: undefined, mustBePresent: true });
  }
  return { clauses, negated };
}

function valueList(values: readonly Json[]): string {
  return values.map(literal).join(', ');
}

function describeClause({ field, values, mustBePresent }: Clause): string {
  if (values === undefined) return `${code(field)} is present`;
  const is = values.length === 1 ? `${literal(values[0] ?? null)}` : `one of ${valueList(values)}`;
  return mustBePresent ? `${code(field)} is ${is}` : `${code(field)} is absent or ${is}`;
}

function describeNegatedClause({ field, values, mustBePresent }: Clause): string {
  if (values === undefined) return `${code(field)} is absent`;
  const is = values.length === 1 ? `${literal(values[0] ?? null)}` : `one of ${valueList(values)}`;
  return mustBePresent ? `${code(field)} is not ${is}` : `${code(field)} is present and not ${is}`;
}

function describeCondition(schema: JsonObject, where: string): string {
  const { clauses, negated } = clausesOf(schema, where);
  return [...clauses.map(describeClause), ...negated.map((n) => describeNegation(n, where))].join(' and ');
}

function describeNegation(schema: JsonObject, where: string): string {
  const { clauses, negated } = clausesOf(schema, where);
  const [only] = clauses;
  if (clauses.length === 1 && negated.length === 0 && only !== undefined) return describeNegatedClause(only);
  return `not (${describeCondition(schema, where)})`;
}

function conditionalsOf(schema: JsonObject, where: string): Conditional[] {
  const condition = schema.if;
  if (!isObject(condition)) throw unsupported(where, 'a non-object if');
  const branches: [Json | undefined, () => string][] = [
    [schema.then, () => describeCondition(condition, where)],
    [schema.else, () => describeNegation(condition, where)],
  ];
  return branches.flatMap(([branch, when]) => {
    if (branch === undefined) return [];
    if (!isObject(branch) || Object.keys(branch).some((k) => k !== 'required' && !(k === 'type' && branch[k] === 'object'))) {
      throw unsupported(where, 'a then/else that does more than require fields');
    }
    return [{ when: when(), required: stringList(branch.required ?? [], where, 'required') }];
  });
}

function literal(value: Json): string {
  return code(typeof value === 'string' ? value : JSON.stringify(value));
}

function jsonType(value: Json): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Whether a place needs rows of its own for what lies below it, rather than a summary in its parent's row. */
function hasInnerRows(flat: Flat): boolean {
  return flat.properties.size > 0 || flat.required.size > 0 || flat.conditionals.length > 0 || flat.items.length > 0 || flat.values.length > 0;
}

function typeOf(flat: Flat, index: SchemaIndex, where: string): string {
  const k = flat.keywords;
  let types = flat.types;
  if (types.length === 0) {
    const enumValues = k.get('enum');
    if (k.has('const')) types = [jsonType(k.get('const') ?? null)];
    else if (Array.isArray(enumValues)) types = [...new Set(enumValues.map(jsonType))];
    else if (flat.properties.size > 0 || flat.values.length > 0) types = ['object'];
    else if (flat.items.length > 0) types = ['array'];
    else types = ['any'];
  }
  const nested = (parts: readonly Located[]): string => {
    const inner = typeOf(flatten(parts, index, where), index, where);
    return inner.includes(' ') ? `(${inner})` : inner;
  };
  return types
    .map((t) => {
      if (t === 'array' && flat.items.length > 0) return `array of ${nested(flat.items)}`;
      if (t === 'object' && flat.values.length > 0 && flat.properties.size === 0) return `map of ${nested(flat.values)}`;
      return t;
    })
    .join(' or ');
}

function numberOf(flat: Flat, keyword: string): number | undefined {
  const value = flat.keywords.get(keyword);
  return typeof value === 'number' ? value : undefined;
}

function range(min: number | undefined, max: number | undefined, unit: string): string | undefined {
  const counted = (n: number | string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (min !== undefined && max !== undefined) return counted(min === max ? min : `${min}–${max}`);
  if (min !== undefined) return `at least ${counted(min)}`;
  if (max !== undefined) return `at most ${counted(max)}`;
  return undefined;
}

function bounds(min: number | undefined, max: number | undefined): string | undefined {
  if (min !== undefined && max !== undefined) return min === max ? `exactly ${min}` : `${min}–${max}`;
  if (min !== undefined) return `at least ${min}`;
  if (max !== undefined) return `at most ${max}`;
  return undefined;
}

function constraintsOf(flat: Flat, index: SchemaIndex, where: string): string {
  const k = flat.keywords;
  const out: string[] = [];
  const enumValues = k.get('enum');
  if (k.has('const')) out.push(`exactly ${literal(k.get('const') ?? null)}`);
  if (Array.isArray(enumValues)) out.push(`one of ${valueList(enumValues)}`);
  const pattern = k.get('pattern');
  if (typeof pattern === 'string') out.push(`pattern ${code(pattern)}`);
  const format = k.get('format');
  if (typeof format === 'string') out.push(`format ${code(format)}`);
  out.push(
    ...[
      numberOf(flat, 'minLength') === 1 && numberOf(flat, 'maxLength') === undefined
        ? 'not empty'
        : range(numberOf(flat, 'minLength'), numberOf(flat, 'maxLength'), 'character'),
      bounds(numberOf(flat, 'minimum'), numberOf(flat, 'maximum')),
      range(numberOf(flat, 'minItems'), numberOf(flat, 'maxItems'), 'item'),
      range(numberOf(flat, 'minProperties'), numberOf(flat, 'maxProperties'), 'key'),
    ].filter((c): c is string => c !== undefined),
  );
  const exclusiveMinimum = numberOf(flat, 'exclusiveMinimum');
  if (exclusiveMinimum !== undefined) out.push(`greater than ${exclusiveMinimum}`);
  const exclusiveMaximum = numberOf(flat, 'exclusiveMaximum');
  if (exclusiveMaximum !== undefined) out.push(`less than ${exclusiveMaximum}`);
  const multipleOf = numberOf(flat, 'multipleOf');
  if (multipleOf !== undefined) out.push(`multiple of ${multipleOf}`);
  if (k.get('uniqueItems') === true) out.push('no duplicates');
  if (k.has('default')) out.push(`default ${literal(k.get('default') ?? null)}`);
  if (flat.propertyNames.length > 0) out.push(`keys: ${constraintsOf(flatten(flat.propertyNames, index, where), index, where)}`);
  const isObjectType = flat.types.includes('object') || flat.properties.size > 0;
  if (flat.closed && flat.values.length === 0) out.push(flat.properties.size > 0 ? 'no other keys' : 'no keys');
  else if (isObjectType && flat.values.length === 0) out.push(flat.properties.size > 0 ? 'other keys allowed' : 'any keys');
  for (const [parts, label] of [
    [flat.items, 'each item'],
    [flat.values, 'each value'],
  ] as const) {
    if (parts.length === 0) continue;
    const inner = flatten(parts, index, where);
    const innerConstraints = hasInnerRows(inner) ? '' : constraintsOf(inner, index, where);
    if (innerConstraints !== '') out.push(`${label}: ${innerConstraints}`);
  }
  return out.join('; ');
}

/** A resolved `$ref` target as a reader of this section finds it: local pointers bare, others with their file name. */
function refLabel(target: string, section: Section): string {
  const hash = target.indexOf('#');
  const document = target.slice(0, hash);
  return document === section.id ? target.slice(hash) : `${document.slice(document.lastIndexOf('/') + 1)}${target.slice(hash)}`;
}

function ownDescription(flat: Flat, section: Section): string {
  const own = flat.description ?? flat.title ?? '';
  const refs = flat.refs.length === 0 ? '' : `(${flat.refs.map((r) => code(refLabel(r, section))).join(' → ')})`;
  return [own, refs].filter((s) => s !== '').join(' ');
}

function descriptionOf(flat: Flat, section: Section, where: string): string {
  const own = ownDescription(flat, section);
  // Elements summed up in this row (no rows of their own) are described here too.
  const elements = [flat.items, flat.values]
    .filter((p) => p.length > 0)
    .map((p) => flatten(p, section.index, where))
    .filter((inner) => !hasInnerRows(inner))
    .map((inner) => ownDescription(inner, section))
    .filter((d) => d !== '')
    .map((d) => `Each: ${d}`);
  const text = [own, ...elements].filter((s) => s !== '').join(' ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

interface FieldRow {
  readonly path: string;
  readonly type: string;
  readonly required: string;
  readonly constraints: string;
  readonly description: string;
}

/** A field that is required but has no schema of its own accepts anything. */
const ANY: Located = { schema: true, base: '' };

function pointerToken(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

function requiredText(parent: Flat, name: string): string {
  if (parent.required.has(name)) return 'yes';
  const when = parent.conditionals.filter((c) => c.required.includes(name)).map((c) => `if ${c.when}`);
  return when.length === 0 ? 'no' : when.join('; or ');
}

/** The schema file a section documents, and where its `$ref`s resolve. */
interface Section {
  readonly index: SchemaIndex;
  readonly file: string;
  readonly id: string;
}

/** Rows for everything below one place of the document. */
function childRows(flat: Flat, path: string, section: Section, ancestors: ReadonlySet<string>, out: FieldRow[]): void {
  const names = [...flat.properties.keys(), ...[...flat.required].filter((n) => !flat.properties.has(n))];
  for (const cond of flat.conditionals) for (const n of cond.required) if (!names.includes(n)) names.push(n);
  for (const name of names) {
    fieldRows(flat.properties.get(name) ?? [ANY], `${path}/${pointerToken(name)}`, requiredText(flat, name), section, ancestors, out);
  }
  for (const [parts, token] of [
    [flat.items, '*'],
    [flat.values, '{key}'],
  ] as const) {
    if (parts.length > 0 && hasInnerRows(flatten(parts, section.index, `${section.file}${path}`))) {
      fieldRows(parts, `${path}/${token}`, '—', section, ancestors, out);
    }
  }
}

function fieldRows(
  parts: readonly Located[],
  path: string,
  required: string,
  section: Section,
  ancestors: ReadonlySet<string>,
  out: FieldRow[],
): void {
  const where = `${section.file}${path}`;
  const flat = flatten(parts, section.index, where);
  const recursive = flat.refs.some((t) => ancestors.has(t));
  out.push({
    path,
    type: typeOf(flat, section.index, where),
    required,
    constraints: recursive ? 'recursive: as the enclosing definition' : constraintsOf(flat, section.index, where),
    description: descriptionOf(flat, section, where),
  });
  if (!recursive) childRows(flat, path, section, new Set([...ancestors, ...flat.refs]), out);
}

function fieldTable(rows: readonly FieldRow[]): string[] {
  return table(
    ['path', 'type', 'required', 'constraints', 'description'],
    rows.map((r) => [code(r.path), r.type, r.required, r.constraints, r.description]),
  );
}

function withArticle(text: string): string {
  return `${/^[aeiou]/i.test(text) ? 'an' : 'a'} ${text}`;
}

function schemaSection(file: SchemaFile, index: SchemaIndex): string[] {
  const id = documentId(file);
  const title = typeof file.schema.title === 'string' ? file.schema.title : file.path;
  const dialect = typeof file.schema.$schema === 'string' ? (DIALECTS[file.schema.$schema] ?? file.schema.$schema) : 'JSON Schema';
  const relative = file.path.slice(SCHEMA_DIR.length + 1);
  const section: Section = { index, file: file.path, id };
  index.visited.clear();
  const root = flatten([{ schema: file.schema, base: id }], index, file.path);
  const rows: FieldRow[] = [];
  childRows(root, '', section, new Set([`${id}#`]), rows);
  const rootConstraints = constraintsOf(root, index, file.path);
  const lines = [
    `## ${title}`,
    '',
    `Schema: [${file.path}](../${file.path}) (${dialect}, \`$id\` ${code(id)}).`,
    '',
    ...(typeof file.schema.description === 'string' ? [file.schema.description, ''] : []),
    ...(SCHEMA_NOTES[relative] === undefined ? [] : [SCHEMA_NOTES[relative], '']),
    `The document is ${withArticle(typeOf(root, index, file.path))}${rootConstraints === '' ? '' : ` (${rootConstraints})`}.`,
    '',
    ...fieldTable(rows),
  ];
  const unused = unusedDefinitions(file, id, index);
  if (unused.length > 0) {
    lines.push('', '### Definitions no field of the document uses', '');
    const defRows: FieldRow[] = [];
    for (const [pointer, schema] of unused) fieldRows([{ schema, base: id }], pointer, '—', section, new Set(), defRows);
    lines.push(...fieldTable(defRows));
  }
  return lines;
}

function unusedDefinitions(file: SchemaFile, id: string, index: SchemaIndex): [string, Json][] {
  const found: [string, Json][] = [];
  for (const container of ['$defs', 'definitions']) {
    const defs = file.schema[container];
    if (!isObject(defs)) continue;
    for (const [name, schema] of Object.entries(defs)) {
      const pointer = `#/${container}/${pointerToken(name)}`;
      if (!index.visited.has(`${id}${pointer}`)) found.push([pointer, schema]);
    }
  }
  return found;
}

/** The text of docs/manifest-reference.md for the given schema files. */
export function renderManifestReference(files: readonly SchemaFile[]): string {
  const index = new SchemaIndex(files);
  const titles = files.map((f) => (typeof f.schema.title === 'string' ? f.schema.title : f.path));
  const lines = [
    headerLine(`the JSON Schemas in ${SCHEMA_DIR}/`),
    '# Manifest and catalog schema reference',
    '',
    'Field by field, what the JSON Schemas shipped in `etc/schemas/` accept: the manifest forms a plugin',
    'author writes, the manifest a handshake plugin sends, and the three catalog files the host keeps in a',
    'profile. The schemas check structure only. Rules that need more than one field or outside knowledge',
    '(namespace ownership, the environment denylist, executable binding, unique tool names, the order in',
    'which violations are reported) are the validator\'s own steps, described in [manifest.md](manifest.md).',
    '',
    `This page is generated from the schemas by \`${GENERATE_COMMAND}\`; the test suite fails when it is out`,
    'of date.',
    '',
    'How to read the tables:',
    '',
    '- **path** is a JSON pointer (RFC 6901) into the document, the same pointer a validation violation',
    '  reports. `*` stands for any index of an array and `{key}` for any key of an object used as a map.',
    '- **type** is the JSON type; `array of string` and `map of object` describe the elements.',
    '- **required** is `yes`, `no`, or the condition under which the field becomes required. For an array',
    '  element or a map value it is `—`.',
    '- **constraints** lists what the schema checks beyond the type. `no other keys` means keys not listed',
    '  are rejected, which catches typos; `each item` and `each value` apply to the elements.',
    '- **description** is the schema\'s own text. A name in parentheses is the shared definition the field',
    '  uses (`→` follows a definition that refers to another).',
    '',
    ...files.map((f, i) => `- [${titles[i] ?? f.path}](#${anchorOf(titles[i] ?? f.path)})`),
  ];
  for (const file of files) lines.push('', ...schemaSection(file, index));
  return finish(lines);
}

// ---------------------------------------------------------------------------
// Command line

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function main(args: readonly string[]): number {
  const unknown = args.filter((a) => a !== '--check');
  if (unknown.length > 0) {
    process.stderr.write(`usage: ${GENERATE_COMMAND} [--check]\n`);
    return 2;
  }
  const check = args.includes('--check');
  let stale = 0;
  for (const doc of renderGeneratedDocs()) {
    const target = join(REPO_ROOT, doc.path);
    if (readIfPresent(target) === doc.content) {
      process.stdout.write(`${doc.path} is up to date\n`);
    } else if (check) {
      process.stderr.write(`${doc.path} is out of date; run ${GENERATE_COMMAND}\n`);
      stale += 1;
    } else {
      writeFileSync(target, doc.content);
      process.stdout.write(`wrote ${doc.path}\n`);
    }
  }
  return stale === 0 ? 0 : 1;
}

const invokedPath = process.argv[1];
if (invokedPath !== undefined && import.meta.url === pathToFileURL(resolve(invokedPath)).href) {
  process.exitCode = main(process.argv.slice(2));
}
