/**
 * What each MCP Bundle `server.type` means to the host: which programs
 * `mcp_config.command` may name to run the entry point, and which
 * `compatibility.runtimes` entry constrains that program's version. A
 * `binary` server is its own executable. Types not listed here (`uv`) are
 * refused with PLUGIN_BUNDLE_UNSUPPORTED.
 */
import { isNodeName, isPythonName } from '../binding/shells.js';

/** How the host runs one kind of bundle server. */
export interface BundleServerType {
  /**
   * Whether `command` names an interpreter this type runs its entry point
   * with (a bare program name, resolved on the interpreter search path at
   * install and pinned); absent for `binary`, whose command is the entry point.
   */
  readonly isInterpreter?: (command: string) => boolean;
  /** The `compatibility.runtimes` key checked against that interpreter's `--version`. */
  readonly runtime?: 'node' | 'python';
}

/** The server types this host runs, by `server.type`. */
export const BUNDLE_SERVER_TYPES: Readonly<Record<string, BundleServerType>> = {
  node: { isInterpreter: isNodeName, runtime: 'node' },
  python: { isInterpreter: isPythonName, runtime: 'python' },
  binary: {},
};
