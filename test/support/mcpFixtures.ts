/** Paths and launchers for the MCP fixture plugins and the reference servers from npm. */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchCommand, type TestLaunchOptions } from './mcpLaunch.js';
import type { ProcessLauncher } from '../../src/shapes/PluginSession.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);

/** The fixture plugin directories. */
export const MCP_FIXTURES = {
  hello: join(root, 'fixtures/plugins/hello'),
  helloPython: join(root, 'fixtures/plugins/hello-python'),
  faulty: join(root, 'fixtures/plugins/mcp-faulty'),
} as const;

/** The tools declared by the mcp-faulty manifest. */
export const FAULTY_TOOLS = ['echo', 'slow', 'hang', 'crash', 'garbage', 'big', 'change_tools'] as const;

/** The entry script of an npm package's bin (node_modules/<pkg>/dist/index.js). */
export function npmServerEntry(pkg: string): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js');
}

/** Launches the Node hello plugin. */
export const launchHello = (options?: TestLaunchOptions): ProcessLauncher =>
  launchCommand([process.execPath, join(MCP_FIXTURES.hello, 'bin/hello-mcp.mjs')], options);

/** Launches the Python hello plugin through its shebang. */
export const launchHelloPython = (options?: TestLaunchOptions): ProcessLauncher =>
  launchCommand([join(MCP_FIXTURES.helloPython, 'bin/hello-mcp')], options);

/** Launches mcp-faulty in a mode (MCP_FAULTY_MODE), or its default behaviour. */
export const launchFaulty = (mode = '', options: TestLaunchOptions = {}): ProcessLauncher =>
  launchCommand([process.execPath, join(MCP_FIXTURES.faulty, 'bin/mcp-faulty.mjs')], {
    ...options,
    env: { ...options.env, MCP_FAULTY_MODE: mode },
  });
