import type { ConfirmationRequest, ToolResult } from '../index.js';
import { fail, failNaming, notInMissingProfile, withHost, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { confirm, readAll } from './prompt.js';
import { continued } from './style.js';
import { usageFailure } from './usage.js';

// What `run` prints for a result whose content list is empty and that has no structuredContent.
const NO_CONTENT = '(no content: the tool answered with an empty result)';

/** The text a person wants from a tool result: MCP text blocks as they are, anything else as JSON. */
function resultText(result: ToolResult): string {
  const value = result.value as { content?: unknown; structuredContent?: unknown } | null;
  const content = value !== null && typeof value === 'object' && Array.isArray(value.content) ? (value.content as unknown[]) : undefined;
  if (content === undefined) return JSON.stringify(result.value, null, 2);
  const parts = content.map((block) => {
    const b = block as { type?: unknown; text?: unknown; mimeType?: unknown; data?: unknown; uri?: unknown };
    if (b.type === 'text' && typeof b.text === 'string') return b.text;
    if (typeof b.data === 'string') return `[${String(b.type)} ${String(b.mimeType ?? '')}, ${Math.floor((b.data.length * 3) / 4)} bytes]`;
    return JSON.stringify(block);
  });
  if (parts.length === 0 && value?.structuredContent !== undefined) return JSON.stringify(value.structuredContent, null, 2);
  // An empty content list printed an empty line, which reads as a hang or a lost answer (mcp-deepwiki@0.0.10 drops its fetch failure
  // and answers `{"content":[]}`): say the tool answered with nothing. --json prints the result as it came.
  if (parts.length === 0) return NO_CONTENT;
  return parts.join('\n');
}

/**
 * `run <plugin> <tool> [json-args|-]`: calls `plug.<plugin>.<tool>` in this
 * process's host, which starts the plugin in its sandbox, and prints the
 * result's text (or, with --json, the raw result). A plugin-local error
 * envelope comes back as its mapped host code (INVALID_ARGS, RATE_LIMITED,
 * AUTH_REQUIRED, SERVICE_DOWN) and exit code 1.
 */
export async function runCommand(ctx: CommandContext): Promise<ExitCode> {
  const [plugin = '', tool = '', rawArgs = '{}'] = ctx.positionals;
  const { out, flags, terminal } = ctx;
  let args: unknown;
  try {
    args = JSON.parse(rawArgs === '-' ? await readAll(terminal.stdin) : rawArgs);
  } catch {
    return usageFailure(ctx, `the arguments must be a JSON object, like '{"name":"world"}'`, 'run');
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return usageFailure(ctx, 'the arguments must be a JSON object, not an array or a scalar', 'run');
  const opId = `plug.${plugin}.${tool}`;

  return withHost(ctx, async (host) => {
    const spinner = out.spinner();
    const approve = async (request: ConfirmationRequest): Promise<boolean> => {
      if (flags.yes) return true;
      if (terminal.stdin.isTTY !== true || out.json) return false;
      spinner.stop();
      return confirm(terminal, `${request.op_id} is a ${request.risk_class} operation that needs confirmation. Run it?`);
    };
    spinner.update(`calling ${opId}`);
    const called = await host.call(opId, args, {
      ...(flags.maxRisk === undefined ? {} : { maxRisk: flags.maxRisk }),
      ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
      confirm: approve,
      signal: ctx.signal,
      onProgress: (p) => spinner.update(`${opId}: ${p.progress}${p.total === undefined ? '' : `/${p.total}`}${p.message === undefined ? '' : ` ${p.message}`}`),
    });
    spinner.stop();
    if (called.isErr()) return failNaming(ctx, host, called.error, { pluginId: plugin, tool }, { op_id: opId });
    const result = called.value;
    out.data({ ok: !result.isError, op_id: opId, result: result.value, is_error: result.isError });
    if (result.isError) {
      // Only shapes without an error envelope to map (ndjson-rpc, handshake) get here.
      // The plugin's text below the CLI's line, indented on every line: none of it can pose as a line of the CLI's own.
      out.note(`${out.errStyle.red('error')} ${opId} reported a failure:\n  ${continued(resultText(result), '  ')}`);
      return EXIT_CODES.runtime;
    }
    out.line(resultText(result));
    return EXIT_CODES.ok;
  }, { withoutProfile: (dir) => fail(ctx, notInMissingProfile(ctx.flags, plugin, dir), false, plugin) });
}
