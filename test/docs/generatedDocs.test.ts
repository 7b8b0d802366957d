import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, spellingOf, type HostErrorCode } from '../../src/errors/registry.js';
import {
  GENERATE_COMMAND,
  loadSchemaFiles,
  renderGeneratedDocs,
  renderManifestReference,
  type SchemaFile,
} from '../../scripts/gen-docs.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const codes = Object.keys(ERROR_CODES) as HostErrorCode[];

/** The markdown of one `### \`CODE\`` section of docs/errors.md. */
function sectionOf(doc: string, code: HostErrorCode): string {
  const start = doc.indexOf(`### \`${code}\`\n`);
  expect(start, `no section for ${code}`).toBeGreaterThanOrEqual(0);
  const next = doc.slice(start + 1).search(/\n##/);
  return next === -1 ? doc.slice(start) : doc.slice(start, start + 1 + next);
}

function rowOf(doc: string, path: string): string[] {
  const line = doc.split('\n').find((l) => l.startsWith(`| \`${path}\` |`));
  expect(line, `no row for ${path}`).toBeDefined();
  return (line ?? '').split(' | ').map((c) => c.replace(/^\| |\s\|$/g, ''));
}

describe('generated docs are current', () => {
  it.each(renderGeneratedDocs().map((d) => [d.path, d.content] as const))('%s matches a fresh render', (path, content) => {
    // On failure: run `npx tsx scripts/gen-docs.ts` and commit the result.
    expect(read(path), `${path} is stale; run ${GENERATE_COMMAND}`).toBe(content);
  });

  it('starts each generated page with a header line naming the command', () => {
    for (const { path } of renderGeneratedDocs()) {
      const [first] = read(path).split('\n');
      expect(first).toMatch(/^<!-- Generated from .+ by "npx tsx scripts\/gen-docs\.ts"\. Do not edit by hand/);
    }
  });

  it('--check exits 0 when the pages are current and 2 on an unknown argument', () => {
    const tsx = join(ROOT, 'node_modules/.bin/tsx');
    const out = execFileSync(tsx, ['scripts/gen-docs.ts', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(out).toContain('docs/errors.md is up to date');
    expect(out).toContain('docs/manifest-reference.md is up to date');
    const bad = spawnSync(tsx, ['scripts/gen-docs.ts', '--write-everything'], { cwd: ROOT, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('usage:');
  });
});

describe('docs/errors.md', () => {
  const doc = read('docs/errors.md');

  it('has a section for every registry code with its stage, meaning, retryability and hint', () => {
    expect(codes.length).toBeGreaterThan(0);
    for (const code of codes) {
      const info = ERROR_CODES[code];
      const section = sectionOf(doc, code);
      expect(section).toContain(info.meaning);
      expect(section).toContain(`- **Stage:** ${info.stage}`);
      expect(section).toContain(`- **Retryable by default:** ${info.retryable ? 'yes' : 'no'}`);
      expect(section).toContain(`- **What to do:** ${info.hint}`);
    }
  });

  it('places each code under the heading of its stage', () => {
    const stageTitles = { install: 'Install stage', runtime: 'Runtime stage', protocol: 'Protocol stage', host: 'Host stage' };
    for (const code of codes) {
      const at = doc.indexOf(`### \`${code}\`\n`);
      const headings = [...doc.slice(0, at).matchAll(/^## (.+)$/gm)];
      expect(headings.at(-1)?.[1], code).toBe(stageTitles[ERROR_CODES[code].stage]);
    }
  });

  it('shows every spelling spellingOf gives, and none it does not', () => {
    const labels = { handshake: 'handshake', ndjson: 'mcptest (ndjson)', jsonrpc: 'JSON-RPC' } as const;
    for (const code of codes) {
      const section = sectionOf(doc, code);
      for (const protocol of ['handshake', 'ndjson', 'jsonrpc'] as const) {
        const word = spellingOf(code, protocol);
        if (word === undefined) expect(section).not.toContain(`${labels[protocol]} \``);
        else expect(section).toContain(`${labels[protocol]} \`${word}\``);
      }
    }
    expect(sectionOf(doc, 'PLUGIN_INVALID_JSON')).toContain('handshake `malformed_response`, mcptest (ndjson) `InvalidJson`, JSON-RPC `-32700`');
  });

  it('maps each protocol word back to every code that carries it', () => {
    const line = doc.split('\n').find((l) => l.startsWith('| `malformed_response` |'));
    expect(line).toContain('PLUGIN_INVALID_JSON');
    expect(line).toContain('PLUGIN_MALFORMED_RESPONSE');
  });
});

describe('docs/manifest-reference.md', () => {
  const doc = read('docs/manifest-reference.md');

  it('has a section for every schema under etc/schemas', () => {
    const files = readdirSync(join(ROOT, 'etc/schemas'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(7);
    for (const file of files) expect(doc).toContain(`Schema: [etc/schemas/${file}](../etc/schemas/${file})`);
    expect(loadSchemaFiles(ROOT).map((f) => f.path.replace('etc/schemas/', '')).sort()).toEqual([...files].sort());
  });

  it('lists nested fields by JSON pointer, with type, requiredness and constraints', () => {
    expect(rowOf(doc, '/plugin_id')).toEqual([
      '`/plugin_id`', 'string', 'yes', 'pattern `^[a-z][a-z0-9-]{0,63}$`',
      "Must be a plugin id: a lowercase letter, then up to 63 lowercase letters, digits or '-'",
    ]);
    expect(rowOf(doc, '/advertised_tools/*/risk_class').slice(1, 4)).toEqual(['string', 'yes', 'one of `read`, `write`, `destructive`']);
    expect(rowOf(doc, '/declared_capabilities/env_allow').slice(1, 4)).toEqual([
      'array of string', 'yes', 'at most 256 items; no duplicates; each item: pattern `^[A-Za-z_][A-Za-z0-9_]{0,127}$`',
    ]);
  });

  it('follows $refs into another schema file and merges allOf', () => {
    // The TOML form makes rate_policy required through allOf on top of the v1 definition.
    const toml = doc.slice(doc.indexOf('## GUM plugin contract manifest (TOML form)'));
    expect(rowOf(toml, '/requirements/rate_policy/requests_per_minute').slice(1, 4)).toEqual(['integer', 'yes', 'at least 1']);
    expect(rowOf(toml, '/requirements/rate_policy')[2]).toBe('yes');
    expect(rowOf(toml, '/plugin/version')[4]).toContain('(`#/$defs/text` → `gum-manifest-v1.schema.json#/$defs/nonBlankString`)');
  });

  it('shows if/then rules as the condition under which a field is required', () => {
    expect(rowOf(doc, '/tools/*/tool_name')[2]).toBe('if `backend_kind` is `mcp-plugin`');
    expect(rowOf(doc, '/tools/*/rpc_method')[2]).toBe('if `backend_kind` is `grpc-plugin`');
    expect(rowOf(doc, '/tools/*/output_profile')[2]).toBe('if `raw_result_allowed` is not `true`');
  });
});

describe('schema renderer', () => {
  const schema = (body: Record<string, unknown>): SchemaFile => ({
    path: 'etc/schemas/x.schema.json',
    schema: JSON.parse(JSON.stringify({ $id: 'https://example.test/x.schema.json', title: 'X', ...body })) as SchemaFile['schema'],
  });

  it('renders maps, else branches and closed objects', () => {
    const out = renderManifestReference([
      schema({
        type: 'object',
        additionalProperties: false,
        properties: {
          byName: { type: 'object', additionalProperties: { $ref: '#/$defs/entry' } },
          kind: { enum: ['a', 'b'] },
          extra: { type: 'string', minLength: 2, maxLength: 2 },
        },
        if: { required: ['kind'], properties: { kind: { const: 'a' } } },
        then: { required: ['byName'] },
        else: { required: ['extra'] },
        $defs: { entry: { type: 'object', required: ['n'], properties: { n: { type: 'integer', minimum: 0, maximum: 9 } } } },
      }),
    ]);
    expect(out).toContain('The document is an object (no other keys).');
    expect(rowOf(out, '/byName').slice(1, 3)).toEqual(['map of object', 'if `kind` is `a`']);
    expect(rowOf(out, '/byName/{key}/n').slice(1, 4)).toEqual(['integer', 'yes', '0–9']);
    expect(rowOf(out, '/extra').slice(1, 4)).toEqual(['string', 'if `kind` is not `a`', '2 characters']);
  });

  it('lists a definition no field uses instead of dropping it', () => {
    const out = renderManifestReference([schema({ type: 'object', $defs: { orphan: { type: 'boolean' } } })]);
    expect(out).toContain('### Definitions no field of the document uses');
    expect(rowOf(out, '#/$defs/orphan')[1]).toBe('boolean');
  });

  it('refuses a keyword it cannot show rather than leaving the rule out', () => {
    expect(() => renderManifestReference([schema({ type: 'object', properties: { a: { oneOf: [{ type: 'string' }] } } })])).toThrow(
      /keyword "oneOf" at etc\/schemas\/x\.schema\.json\/a/,
    );
  });

  it('escapes pipes inside table cells', () => {
    const out = renderManifestReference([schema({ type: 'object', properties: { p: { type: 'string', pattern: '^(a|b)$' } } })]);
    expect(out).toContain('pattern `^(a\\|b)$`');
  });
});
