import type { OperationView, ToolDescriptor } from '../index.js';
import { fail, failNaming, notInMissingProfile, withHost, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { continued, oneLineField } from './style.js';

/** A schema on one line, for the text view. */
const oneLine = (schema: unknown): string => JSON.stringify(schema);

/**
 * `tools <plugin>`: the tools the plugin lists now (it is started in its
 * sandbox, as for a call), each with its op id and risk class from the
 * manifest and the input and output schemas and annotations the plugin states.
 */
export function toolsCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = ctx.positionals[0] ?? '';
  const { out } = ctx;
  return withHost(ctx, async (host) => {
    const info = await host.info(name);
    if (info.isErr()) return failNaming(ctx, host, info.error, { pluginId: name });
    const listed = await host.tools(name);
    if (listed.isErr()) return failNaming(ctx, host, listed.error, { pluginId: name });
    const operations = new Map(info.value.operations.map((o) => [o.tool_name, o]));
    const tools = listed.value.map((tool) => toolView(tool, operations.get(tool.name)));
    out.data({ ok: true, plugin_id: name, tools });
    const s = out.style;
    for (const tool of tools) {
      // The name and description come from the running plugin: the name on its one line, the description indented on
      // every line, so neither can pose as a line of the CLI's own.
      out.line(`${s.bold(oneLineField(tool.name))}  ${s.dim(`${tool.op_id ?? '-'}  ${tool.risk_class ?? '-'}`)}`);
      if (tool.description !== undefined) out.line(`  ${continued(tool.description, '  ')}`);
      if (tool.annotations !== undefined) out.line(`  ${s.dim('annotations')}  ${oneLine(tool.annotations)}`);
      if (tool.inputSchema !== undefined) out.line(`  ${s.dim('input')}        ${oneLine(tool.inputSchema)}`);
      if (tool.outputSchema !== undefined) out.line(`  ${s.dim('output')}       ${oneLine(tool.outputSchema)}`);
    }
    if (tools.length === 0) out.line(`${name} lists no tools`);
    return EXIT_CODES.ok;
  }, { withoutProfile: (dir) => fail(ctx, notInMissingProfile(ctx.flags, name, dir), false, name) });
}

interface ToolView extends ToolDescriptor {
  readonly op_id: string | null;
  readonly risk_class: string | null;
}

function toolView(tool: ToolDescriptor, operation: OperationView | undefined): ToolView {
  return { ...tool, op_id: operation?.op_id ?? null, risk_class: operation?.risk_class ?? null };
}
