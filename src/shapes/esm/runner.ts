/**
 * The ESM runner: a subprocess that hosts exactly one Open Discovery plugin
 * and serves it over MCP stdio, so that an ESM plugin gets the sandbox,
 * limits and supervision of any MCP plugin. Usage:
 * `node esm-runner.js [--strict-capabilities] [--strict-tools] [--schema-path P]
 * [--create-timeout-ms N] [--watch] [--debug-registry]
 * [--entry <path> --entry-sha256 <hex> --entry-fd <n>] -- <pluginRoot>`.
 * With `--entry…` the entry module is evaluated from the verified bytes on
 * descriptor `n` (see `serveVerifiedEntry`), never read from the root.
 *
 * A plugin that fails to load makes the runner write one `load-failed`
 * report line to stderr and exit with {@link ESM_RUNNER_LOAD_FAILED_EXIT}
 * before any MCP traffic; the host turns it into the load's HostError with
 * `esmRunnerFailure`. With `--report-fd <n>` a report made before any plugin
 * code runs carries the start's seal from descriptor `n`, which is closed
 * unread before the plugin is imported (see `runnerReportSeal`).
 */
import { closeSync, createWriteStream, fstatSync, readSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ok } from 'neverthrow';
import type { HostError } from '../../errors/HostError.js';
import type { Logger } from '../../ports/ports.js';
import { dropHomeGlobalPaths } from '../../binding/nodeGlobalPaths.js';
import { numberRequestsFromOne } from '../mcp/requestIds.js';
import { loadPlugins } from './loadPlugins.js';
import { esmManifestValidator, readEsmManifest } from './manifestFile.js';
import { parseRunnerArguments } from './runnerArgs.js';
import { serveVerifiedEntry } from './verifiedEntry.js';
import { ESM_RUNNER_LOAD_FAILED_EXIT, formatRunnerReport, loadFailedReport, type EsmRunnerReport } from './runnerDiagnostic.js';
import { watchPlugin } from './watchPlugin.js';

const report = (line: EsmRunnerReport): void => {
  process.stderr.write(`${formatRunnerReport(line)}\n`);
};

/**
 * The start's seal, read from its descriptor, or `undefined` (none passed,
 * or unreadable: the report then goes unsealed and the host believes less of
 * it). Called only for a report made before any plugin code ran, right
 * before the runner exits.
 */
function readSeal(fd: number | undefined): string | undefined {
  if (fd === undefined) return undefined;
  try {
    const bytes = Buffer.alloc(Math.min(fstatSync(fd).size, 256));
    const n = readSync(fd, bytes, 0, bytes.length, 0);
    return bytes.subarray(0, n).toString('utf8');
  } catch {
    return undefined;
  }
}

/** Reports a load that failed before any plugin code ran, sealed with the start's seal. */
const reportSealed = (error: HostError, sealFd: number | undefined): void => {
  process.stderr.write(`${formatRunnerReport(loadFailedReport(error), readSeal(sealFd))}\n`);
};

/**
 * Closes the seal's descriptor unread, before the plugin's code is imported:
 * the seal never enters this process's memory, and a closed descriptor on an
 * unlinked file cannot be reopened through /proc/self/fd, so the plugin has
 * no way to seal a report of its own.
 */
function dropSeal(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // Not open (the host passed none at this number): nothing for the plugin to reach either.
  }
}

const stderrLogger: Logger = {
  debug: (fields, message) => process.stderr.write(`debug ${message} ${JSON.stringify(fields)}\n`),
  info: (fields, message) => process.stderr.write(`info ${message} ${JSON.stringify(fields)}\n`),
  warn: (fields, message) => process.stderr.write(`warn ${message} ${JSON.stringify(fields)}\n`),
  error: (fields, message) => process.stderr.write(`error ${message} ${JSON.stringify(fields)}\n`),
};

/**
 * MCP owns file descriptor 1. Whatever the plugin prints through console or
 * process.stdout goes to stderr instead, so it cannot corrupt the protocol.
 */
function reserveStdoutForMcp(): Writable {
  const protocolOut = createWriteStream('', { fd: 1 });
  const toStderr = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  process.stdout.write = toStderr;
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  return protocolOut;
}

async function main(): Promise<number | undefined> {
  // Before anything of the plugin loads: its HOME is its data directory, where a planted module must not answer require().
  dropHomeGlobalPaths();
  const settings = parseRunnerArguments(process.argv.slice(2));
  if (settings.isErr()) {
    report(loadFailedReport(settings.error));
    return ESM_RUNNER_LOAD_FAILED_EXIT;
  }
  const { root, watch, verifiedEntry, reportFd, ...flags } = settings.value;
  const protocolOut = reserveStdoutForMcp();
  const manifest = await esmManifestValidator(flags.schemaPath).andThen((validator) => readEsmManifest(root, validator));
  if (manifest.isErr()) {
    reportSealed(manifest.error, reportFd);
    return ESM_RUNNER_LOAD_FAILED_EXIT;
  }
  const pinned = verifiedEntry === undefined ? ok(undefined) : serveVerifiedEntry(root, manifest.value.entry, verifiedEntry);
  if (pinned.isErr()) {
    reportSealed(pinned.error, reportFd);
    return ESM_RUNNER_LOAD_FAILED_EXIT;
  }
  // From here on the plugin's code may run (its import, createPlugin): whatever is reported after this goes unsealed.
  dropSeal(reportFd);
  // The plugin's identity is the server's, so the host's serverInfo names the plugin. Logging is announced so that
  // the host can set the level and a handler's log notifications (extra.sendNotification) reach the host as events.
  const server = new McpServer({ name: manifest.value.plugin_id, version: manifest.value.version }, { capabilities: { logging: {} } });
  // A handler's first request to the host (extra.sendRequest: sampling, elicitation, roots) would be id 0, which the
  // host's SDK Client cannot cancel: numbered from 1, a plugin's withdrawn first request is withdrawn at the host too.
  numberRequestsFromOne(server.server);
  const source = { root, manifest: manifest.value, ...(pinned.value === undefined ? {} : { entry: pinned.value }) };
  const loaded = await loadPlugins(server, [source], { ...flags, trust: 'in-process', logger: stderrLogger });
  const plugin = loaded.isOk() ? loaded.value.plugins[0] : undefined;
  if (plugin === undefined) {
    const error = loaded.isErr() ? loaded.error : loaded.value.summary.failed[0]?.error;
    if (error !== undefined) report(loadFailedReport(error));
    return ESM_RUNNER_LOAD_FAILED_EXIT;
  }
  report({ kind: 'loaded', plugin: plugin.id, version: plugin.version, warnings: plugin.warnings });
  const watcher = watch
    ? watchPlugin(plugin, (event) =>
        report(
          event.ok
            ? { kind: 'reloaded', plugin: event.plugin, version: event.result.version, warnings: event.result.warnings }
            : { kind: 'reload-failed', plugin: event.plugin, code: event.error.code, message: event.error.message },
        ),
      )
    : undefined;
  await server.connect(new StdioServerTransport(process.stdin, protocolOut));
  process.stdin.once('end', () => {
    watcher?.close();
    void server.close().finally(() => process.exit(0));
  });
  return undefined;
}

// A failed plugin may have left timers or sockets behind: exit explicitly once stderr is flushed.
const exitAfterStderr = (code: number): void => {
  process.stderr.write('', () => process.exit(code));
};

main().then(
  (exitCode) => {
    if (exitCode !== undefined) exitAfterStderr(exitCode);
  },
  (cause: unknown) => {
    process.stderr.write(`esm runner failed: ${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)}\n`);
    exitAfterStderr(70);
  },
);
