/**
 * Every TypeScript snippet of the user-facing docs compiles, under `strict`, against the declarations the package
 * ships (dist/*.d.ts, reached through the package's own `exports` map by its name, as an application imports it).
 * A snippet is a fragment: the names it uses without defining them (`host`, the application's own `askUser`) are
 * declared for it below with precise types, never `any`, so a snippet that misuses the API fails here. A ```ts
 * block whose fence reads ```ts sketch is pseudo-code and is not compiled. Every complete GUM manifest the pages
 * show (a ```json block with `manifest_schema_version`) passes the validator.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** One type-check of every snippet with the package's declarations and the MCP SDK's (seconds alone, more on a busy machine). */
const SLOW = 300_000;

/** Every Markdown page a user reads: the README, every page of docs/ and any README of an example. */
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
  ...readdirSync(join(ROOT, 'examples'))
    .map((name) => `examples/${name}/README.md`)
    .filter((path) => existsSync(join(ROOT, path))),
];

/** Imports a snippet may rely on without writing them, as the page around it does. */
const IMPORTS: Readonly<Record<string, string>> = {
  PluginHost: "import { PluginHost } from 'mcp-plugin-host';",
  HostError: "import { HostError } from 'mcp-plugin-host';",
  SecretStore: "import type { SecretStore } from 'mcp-plugin-host';",
  ResultAsync: "import { ResultAsync } from 'neverthrow';",
};

/** The application's own names the snippets use, typed as an application would have them. */
const PLACEHOLDERS: Readonly<Record<string, string>> = {
  host: 'declare const host: PluginHost;',
  askUser: [
    'declare function askUser(question: string): Promise<boolean>;',
    'declare function askUser(message: string, schema: object): Promise<Record<string, string | number | boolean | string[]>>;',
  ].join('\n'),
  myModel: 'declare const myModel: { complete(messages: readonly unknown[], options: { maxTokens: number; signal: AbortSignal }): Promise<string> };',
  readKeychainItem: 'declare function readKeychainItem(key: string): Promise<string | undefined>;',
  writeKeychainItem: 'declare function writeKeychainItem(key: string, json: string): Promise<void>;',
  deleteKeychainItem: 'declare function deleteKeychainItem(key: string): Promise<void>;',
  toHostIoError: 'declare function toHostIoError(cause: unknown): HostError;',
  forward: 'declare function forward(result: unknown): void;',
  pkg: 'declare const pkg: string;',
  pluginDir: 'declare const pluginDir: string;',
  profileDir: 'declare const profileDir: string;',
};

interface Snippet {
  /** `docs/embedding.md:225`, the line of the opening fence. */
  readonly where: string;
  readonly code: string;
  /** TypeScript, or JavaScript as a CommonJS (`require`) or ES module file (compiled as checked JavaScript). */
  readonly kind: 'ts' | 'cjs' | 'mjs';
}

/** The ```ts blocks of one page, and ```js blocks that `require` or `import` the package (compiled as checked JavaScript). */
function snippetsOf(path: string, markdown: string): Snippet[] {
  const found: Snippet[] = [];
  const fence = /^```(ts|typescript|js|javascript)([^\n]*)\n([\s\S]*?)^```/gm;
  for (let m = fence.exec(markdown); m !== null; m = fence.exec(markdown)) {
    const [, lang = '', info = '', code = ''] = m;
    if (/\bsketch\b/.test(info)) continue;
    const where = `${path}:${markdown.slice(0, m.index).split('\n').length}`;
    if (!lang.startsWith('j')) found.push({ where, code, kind: 'ts' });
    else if (code.includes("require('mcp-plugin-host")) found.push({ where, code, kind: 'cjs' });
    else if (/\bfrom 'mcp-plugin-host(?:\/[a-z]+)?'/.test(code)) found.push({ where, code, kind: 'mjs' });
    // Other JavaScript is a plugin's own module (it imports the SDK, not this package), not an application of this API.
  }
  return found;
}

/** Whether the snippet defines `name` itself (imports, declares or binds it). */
function defines(code: string, name: string): boolean {
  return new RegExp(`\\b(?:const|let|var|function|class|type|interface)\\s+${name}\\b|import[^;]*\\b${name}\\b[^;]*from`).test(code);
}

/** The module compiled for a snippet: the imports and placeholders it uses but does not define, then the snippet. */
function moduleFor(snippet: Snippet): string {
  if (snippet.kind !== 'ts') return snippet.code;
  const uses = (name: string): boolean => new RegExp(`\\b${name}\\b`).test(snippet.code) && !defines(snippet.code, name);
  const placeholders = Object.keys(PLACEHOLDERS).filter(uses);
  // A placeholder's type may name an import the snippet itself does not use.
  const needed = new Set([...Object.keys(IMPORTS).filter(uses), ...placeholders.flatMap((p) => Object.keys(IMPORTS).filter((i) => PLACEHOLDERS[p]?.includes(i) && !defines(snippet.code, i)))]);
  return [...[...needed].map((i) => IMPORTS[i]), ...placeholders.map((p) => PLACEHOLDERS[p]), snippet.code, 'export {};'].join('\n');
}

const snippets = DOCS.flatMap((path) => snippetsOf(path, readFileSync(join(ROOT, path), 'utf8')));
let scratch: string | undefined;
afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe('docs snippets', () => {
  it('finds the snippets of the pages it checks', () => {
    expect(snippets.map((s) => s.where)).toEqual(expect.arrayContaining([expect.stringMatching(/^README\.md:/), expect.stringMatching(/^docs\/embedding\.md:/)]));
    expect(snippets.some((s) => s.kind === 'cjs')).toBe(true);
    expect(snippets.some((s) => s.kind === 'mjs')).toBe(true);
    // The pages whose snippets showed unexported or mistyped API before every page was checked.
    for (const page of ['docs/install-safety.md', 'docs/env-and-namespaces.md', 'docs/protocols-ndjson-and-handshake.md', 'docs/error-mapping.md']) {
      expect(snippets.map((s) => s.where.split(':')[0])).toContain(page);
    }
  });

  it('show GUM manifests that pass every grammar check', () => {
    const manifests = DOCS.flatMap((path) =>
      [...readFileSync(join(ROOT, path), 'utf8').matchAll(/^```json\n([\s\S]*?)^```/gm)]
        .map((m) => m[1] ?? '')
        .filter((text) => text.includes('"manifest_schema_version"'))
        .map((text) => ({ path, text })),
    );
    expect(manifests.map((m) => m.path)).toContain('docs/manifest.md');
    const validator = new ManifestValidator();
    for (const { path, text } of manifests) {
      const checked = validator.validateValue(JSON.parse(text) as unknown, 'gum-json');
      expect(checked.isErr() ? `${path}: ${checked.error.code} ${JSON.stringify(checked.error.details)}` : 'valid').toBe('valid');
    }
  });

  it('compile under strict against the shipped declarations', () => {
    expect(existsSync(join(ROOT, 'dist/index.d.ts')), 'dist/ has no declarations: run npm run build').toBe(true);
    // Inside the repository, so that `mcp-plugin-host` resolves to this package by its name through `exports`.
    mkdirSync(join(ROOT, 'temp'), { recursive: true });
    scratch = mkdtempSync(join(ROOT, 'temp', 'doc-snippets-'));
    const files = new Map<string, Snippet>();
    snippets.forEach((snippet, i) => {
      const file = join(scratch!, `snippet-${i}.${snippet.kind}`);
      writeFileSync(file, moduleFor(snippet));
      files.set(file, snippet);
    });
    const program = ts.createProgram([...files.keys()], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      moduleDetection: ts.ModuleDetectionKind.Force,
      allowJs: true,
      checkJs: true,
      types: ['node'],
      // The shipped declarations are checked too: an application compiles them with its own code.
      skipLibCheck: false,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0] ?? '';
      const snippet = d.file === undefined ? undefined : files.get(d.file.fileName);
      if (d.file === undefined || snippet === undefined) return `${d.file === undefined ? '' : relative(ROOT, d.file.fileName)}: ${message}`;
      const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
      const text = d.file.text.split('\n')[line] ?? '';
      return `${snippet.where} (snippet line "${text.trim().slice(0, 100)}"): ${message}`;
    });
    expect(problems).toEqual([]);
  }, SLOW);
});
