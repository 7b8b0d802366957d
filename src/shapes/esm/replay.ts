import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../../errors/HostError.js';
import type { CapturedRegistration, CapturedToolConfig, LiveHandle } from './CaptureServer.js';
import { schemaKind, zodFromJsonSchema } from './schemaKinds.js';

/** A registration as it now exists on a real server. */
export interface LiveRegistration {
  /** What was registered. */
  readonly registration: CapturedRegistration;
  /** The SDK handle (`RegisteredTool`, `RegisteredResource`, …). */
  readonly live: LiveHandle;
}

/** Counts of what a plugin has registered. */
export interface RegistrationCounts {
  /** Tools. */
  readonly tools: number;
  /** Resources and resource templates. */
  readonly resources: number;
  /** Prompts. */
  readonly prompts: number;
}

/** How many of each kind a list of registrations holds. */
export function countRegistrations(registrations: readonly CapturedRegistration[]): RegistrationCounts {
  return {
    tools: registrations.filter((r) => r.kind === 'tool').length,
    resources: registrations.filter((r) => r.kind === 'resource').length,
    prompts: registrations.filter((r) => r.kind === 'prompt').length,
  };
}

function asZod(schema: unknown): unknown {
  if (schemaKind(schema) !== 'json-schema') return schema;
  const converted = zodFromJsonSchema(schema as Record<string, unknown>);
  // Validation already refused schemas that do not convert.
  return 'schema' in converted ? converted.schema : undefined;
}

/**
 * The config a tool is served with: JSON Schemas as zod, and the title the
 * Open Discovery loader gives it (config.title, else annotations.title,
 * else the tool's name), so every client shows the same name for it.
 */
function toolConfigForServer(name: string, config: CapturedToolConfig): CapturedToolConfig {
  const { inputSchema, outputSchema, ...rest } = config;
  const input = asZod(inputSchema);
  const output = asZod(outputSchema);
  const annotated = config.annotations?.['title'];
  const title = config.title ?? (typeof annotated === 'string' ? annotated : name);
  return { ...rest, title, ...(input === undefined ? {} : { inputSchema: input }), ...(output === undefined ? {} : { outputSchema: output }) };
}

function registerOne(server: McpServer, registration: CapturedRegistration): LiveHandle {
  switch (registration.kind) {
    case 'tool':
      return server.registerTool(registration.name, toolConfigForServer(registration.name, registration.config) as never, registration.callback as never);
    case 'resource':
      return server.registerResource(registration.name, registration.target as never, registration.metadata as never, registration.callback as never);
    case 'prompt':
      return server.registerPrompt(registration.name, registration.config as never, registration.callback as never);
  }
}

/** Removes registrations from the server, newest first. */
export function removeRegistrations(live: readonly LiveRegistration[]): void {
  for (const { live: handle } of [...live].reverse()) handle.remove();
}

/**
 * Registers a plugin's captured registrations on the real server, all or
 * nothing: if McpServer refuses one (a name another plugin already holds),
 * the ones already made are removed again and the plugin fails with
 * PLUGIN_NAMESPACE_CONFLICT (HOST_INVALID_OPTIONS when the server was
 * connected before its first registration of that kind; see
 * {@link prepareServerForPlugins}). On success each captured handle is bound to its
 * SDK handle, and items the plugin disabled during preflight stay disabled.
 */
export function replayRegistrations(server: McpServer, plugin: string, registrations: readonly CapturedRegistration[]): Result<LiveRegistration[], HostError> {
  const done: LiveRegistration[] = [];
  for (const registration of registrations) {
    try {
      done.push({ registration, live: registerOne(server, registration) });
    } catch (cause) {
      removeRegistrations(done);
      const message = cause instanceof Error ? cause.message : String(cause);
      if (server.isConnected() && /after connect/i.test(message)) {
        return err(
          hostError('HOST_INVALID_OPTIONS', `${plugin}: McpServer refuses a first ${registration.kind} registration once connected: ${message}`, {
            details: { plugin, kind: registration.kind, name: registration.name },
            hint: 'Load plugins before connecting the server, or call prepareServerForPlugins(server) before connect.',
            cause,
          }),
        );
      }
      return err(
        hostError('PLUGIN_NAMESPACE_CONFLICT', `${plugin}: ${registration.kind} "${registration.name}" cannot be registered: ${message}`, {
          details: { plugin, kind: registration.kind, name: registration.name },
          hint: 'Another plugin on this server already registered this name; rename it in one of the plugins.',
          cause,
        }),
      );
    }
  }
  for (const { registration, live } of done) {
    registration.handle.bind(live);
    if (!registration.handle.enabled) live.disable();
  }
  return ok(done);
}
