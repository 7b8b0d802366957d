/** Fixture paths, temp plugin workspaces and an SDK client wired to a server, for the esm-module tests. */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The ESM fixture plugins. */
export const ESM_FIXTURES = {
  allCapabilities: join(REPO, 'fixtures/plugins/esm-all-capabilities'),
  undeclared: join(REPO, 'fixtures/plugins/esm-undeclared'),
  invalidTool: join(REPO, 'fixtures/plugins/esm-invalid-tool'),
  noCreatePlugin: join(REPO, 'fixtures/plugins/esm-no-create-plugin'),
} as const;

/** The runner started from source, as the tests run it. */
export const RUNNER_ARGV: readonly string[] = [process.execPath, '--import', 'tsx', join(REPO, 'src/shapes/esm/runner.ts')];

/** A fresh McpServer, and a way to connect an SDK Client to it in memory (McpServer wants registrations before connect). */
export function serverWithClient(): { server: McpServer; client: Client; connect: () => Promise<void>; close: () => Promise<void> } {
  const server = new McpServer({ name: 'esm-test-host', version: '0.0.0' });
  const client = new Client({ name: 'esm-test-client', version: '0.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  return {
    server,
    client,
    connect: async () => {
      await server.connect(serverSide);
      await client.connect(clientSide);
    },
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

/** A manifest for a generated plugin. */
export interface GeneratedPlugin {
  readonly name: string;
  readonly dependencies?: readonly string[];
  readonly tools?: readonly string[];
  readonly entry?: string;
  /** The entry's source; by default it registers each tool as an echo. */
  readonly source?: string;
}

/** The source of a plugin that registers each named tool, answering `<prefix><text>`. */
export function echoToolsSource(tools: readonly string[], prefix = ''): string {
  const lines = tools.map(
    (t) =>
      `  server.registerTool(${JSON.stringify(t)}, { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: ${JSON.stringify(prefix)} + text }] }));`,
  );
  return `import { z } from 'zod';\nexport function createPlugin(server) {\n${lines.join('\n')}\n}\n`;
}

/** A temp directory whose plugins resolve `zod` and the SDK from this repository's node_modules. */
export class Workspace {
  private constructor(readonly dir: string) {}

  static async create(): Promise<Workspace> {
    const dir = await mkdtemp(join(tmpdir(), 'esm-plugins-'));
    await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
    return new Workspace(dir);
  }

  /** Writes `<dir>/<folder>/mcp-plugin.json` and its entry; returns the root. */
  async plugin(spec: GeneratedPlugin, folder = spec.name): Promise<string> {
    const root = join(this.dir, folder);
    const entry = spec.entry ?? 'index.mjs';
    const tools = spec.tools ?? [`${spec.name}_echo`];
    await mkdir(root, { recursive: true });
    const manifest = {
      name: spec.name,
      version: '1.0.0',
      sdk: '@modelcontextprotocol/sdk@^1.32.0',
      entry,
      capabilities: { tools: tools.map((name) => ({ name })) },
      ...(spec.dependencies === undefined ? {} : { dependencies: spec.dependencies }),
    };
    await writeFile(join(root, 'mcp-plugin.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    if (!entry.includes('..')) {
      await mkdir(dirname(join(root, entry)), { recursive: true });
      await writeFile(join(root, entry), spec.source ?? echoToolsSource(tools));
    }
    return root;
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The text of the first content block of a tool result. */
export function firstText(result: unknown): string | undefined {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content;
  return content?.[0]?.text;
}
