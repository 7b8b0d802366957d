import { isRecord } from '../../manifest/access.js';
import { schemaKind } from './schemaKinds.js';

/** A tool callback, as the plugin wrote it. */
export type CapturedCallback = (...args: never[]) => unknown;

/** The config a tool was registered with (McpServer.registerTool's second argument). */
export interface CapturedToolConfig {
  /** Display title. */
  readonly title?: string;
  /** What the tool does. */
  readonly description?: string;
  /** A zod raw shape, a zod object schema, or a JSON Schema object. */
  readonly inputSchema?: unknown;
  /** Same kinds as `inputSchema`. */
  readonly outputSchema?: unknown;
  /** MCP tool annotations. */
  readonly annotations?: Readonly<Record<string, unknown>>;
  /** Protocol metadata. */
  readonly _meta?: Readonly<Record<string, unknown>>;
}

/** The config a prompt was registered with. */
export interface CapturedPromptConfig {
  /** Display title. */
  readonly title?: string;
  /** What the prompt does. */
  readonly description?: string;
  /** A zod raw shape of the prompt's arguments. */
  readonly argsSchema?: unknown;
}

/** What a resource template object must offer (duck-typed: the plugin may bundle its own SDK copy). */
export interface ResourceTemplateLike {
  /** The URI template, e.g. `mcp://docs/{id}`. */
  readonly uriTemplate: { toString(): string };
}

/** One `registerTool` (or legacy `tool`) call. */
export interface CapturedTool {
  /** Discriminant. */
  readonly kind: 'tool';
  /** Tool name. */
  readonly name: string;
  /** Its config. */
  readonly config: CapturedToolConfig;
  /** Its handler. */
  readonly callback: CapturedCallback;
  /** The handle returned to the plugin. */
  readonly handle: CapturedHandle;
}

/** One `registerResource` (or legacy `resource`) call. */
export interface CapturedResource {
  /** Discriminant. */
  readonly kind: 'resource';
  /** Resource name. */
  readonly name: string;
  /** A fixed URI or a resource template. */
  readonly target: string | ResourceTemplateLike;
  /** Resource metadata (mimeType, description, …). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Its read callback. */
  readonly callback: CapturedCallback;
  /** The handle returned to the plugin. */
  readonly handle: CapturedHandle;
}

/** One `registerPrompt` (or legacy `prompt`) call. */
export interface CapturedPrompt {
  /** Discriminant. */
  readonly kind: 'prompt';
  /** Prompt name. */
  readonly name: string;
  /** Its config. */
  readonly config: CapturedPromptConfig;
  /** Its callback. */
  readonly callback: CapturedCallback;
  /** The handle returned to the plugin. */
  readonly handle: CapturedHandle;
}

/** Any captured registration. */
export type CapturedRegistration = CapturedTool | CapturedResource | CapturedPrompt;

/** The part of an SDK `Registered*` handle a captured handle forwards to once registered. */
export interface LiveHandle {
  /** Lists the item again. */
  enable(): void;
  /** Hides the item without removing it. */
  disable(): void;
  /** Removes the item from the server. */
  remove(): void;
  /** Changes the item in place. */
  update(updates: never): void;
}

/**
 * The handle a plugin gets back from a registration on the capture server.
 * Before the plugin is registered it records enable/disable/remove; after,
 * it forwards to the real SDK handle.
 */
export class CapturedHandle {
  #enabled = true;
  #live: LiveHandle | undefined;
  readonly #onRemove: () => void;

  /** @param onRemove - Drops the registration from the capture. */
  constructor(onRemove: () => void) {
    this.#onRemove = onRemove;
  }

  /** Whether the item is listed. */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** Lists the item again. */
  enable(): void {
    this.#enabled = true;
    this.#live?.enable();
  }

  /** Hides the item. */
  disable(): void {
    this.#enabled = false;
    this.#live?.disable();
  }

  /** Removes the item (from the capture, or from the server once registered). */
  remove(): void {
    if (this.#live === undefined) this.#onRemove();
    else this.#live.remove();
  }

  /** Changes the item; only possible once the plugin is registered. */
  update(updates: unknown): void {
    if (this.#live === undefined) throw new Error('update() is available only after the plugin has been registered');
    this.#live.update(updates as never);
  }

  /** Connects this handle to the real SDK handle (called by the loader after replay). */
  bind(live: LiveHandle): void {
    this.#live = live;
  }
}

/**
 * The registration surface of McpServer that `createPlugin(server)` may use,
 * so that plugins written against McpServer run against the capture unchanged.
 */
export interface PluginRegistrar {
  /** McpServer.registerTool. */
  registerTool(name: string, config: CapturedToolConfig, callback: CapturedCallback): CapturedHandle;
  /** McpServer.registerResource. */
  registerResource(name: string, uriOrTemplate: string | ResourceTemplateLike, metadata: Readonly<Record<string, unknown>>, callback: CapturedCallback): CapturedHandle;
  /** McpServer.registerPrompt. */
  registerPrompt(name: string, config: CapturedPromptConfig, callback: CapturedCallback): CapturedHandle;
  /** The deprecated McpServer.tool overloads. */
  tool(name: string, ...rest: unknown[]): CapturedHandle;
  /** The deprecated McpServer.resource overloads. */
  resource(name: string, ...rest: unknown[]): CapturedHandle;
  /** The deprecated McpServer.prompt overloads. */
  prompt(name: string, ...rest: unknown[]): CapturedHandle;
  /** Always false: nothing is connected during preflight. */
  isConnected(): boolean;
  /** No-op during preflight (the real server announces changes on registration). */
  sendToolListChanged(): void;
  /** No-op during preflight. */
  sendResourceListChanged(): void;
  /** No-op during preflight. */
  sendPromptListChanged(): void;
}

function requireName(what: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new TypeError(`${what} name must be a non-empty string`);
  return name;
}

function requireCallback(what: string, name: string, callback: unknown): CapturedCallback {
  if (typeof callback !== 'function') throw new TypeError(`${what} ${name}: the last argument must be a callback function`);
  return callback as CapturedCallback;
}

function takeCallback(what: string, name: string, rest: unknown[]): CapturedCallback {
  return requireCallback(what, name, rest.pop());
}

function isResourceTemplate(value: unknown): value is ResourceTemplateLike {
  return isRecord(value) && 'uriTemplate' in value && value['uriTemplate'] !== undefined;
}

/** The key McpServer uses to refuse a second registration of the same item. */
function identityOf(registration: CapturedRegistration): string {
  if (registration.kind !== 'resource') return `${registration.kind}:${registration.name}`;
  return typeof registration.target === 'string' ? `resource-uri:${registration.target}` : `resource-template:${registration.name}`;
}

/**
 * The capture proxy handed to `createPlugin(server)` during preflight. It
 * accepts McpServer's registration calls (the `register*` methods and the
 * deprecated `tool`/`resource`/`prompt` overloads), checks their arguments
 * and refuses duplicates the way McpServer does, and records them in order
 * without registering anything. Once sealed, further calls throw: a plugin
 * registers during `createPlugin` or not at all.
 */
export class CaptureServer implements PluginRegistrar {
  readonly #registrations: CapturedRegistration[] = [];
  #sealed = false;

  /** Registrations still in the capture, in call order. */
  get registrations(): readonly CapturedRegistration[] {
    return this.#registrations;
  }

  /** Refuses every later registration. */
  seal(): void {
    this.#sealed = true;
  }

  #record<R extends CapturedRegistration>(build: (handle: CapturedHandle) => R): CapturedHandle {
    if (this.#sealed) throw new Error('registrations are accepted only while createPlugin(server) runs');
    let record: R | undefined;
    const handle = new CapturedHandle(() => {
      const index = record === undefined ? -1 : this.#registrations.indexOf(record);
      if (index >= 0) this.#registrations.splice(index, 1);
    });
    record = build(handle);
    const key = identityOf(record);
    if (this.#registrations.some((r) => identityOf(r) === key)) {
      const label = record.kind === 'resource' && typeof record.target === 'string' ? `Resource ${record.target}` : `${record.kind} ${record.name}`;
      throw new Error(`${label} is already registered`);
    }
    this.#registrations.push(record);
    return handle;
  }

  /** Records a tool, as McpServer.registerTool would register it. */
  registerTool(name: string, config: CapturedToolConfig, callback: CapturedCallback): CapturedHandle {
    const toolName = requireName('tool', name);
    const fn = requireCallback('tool', toolName, callback);
    const toolConfig = isRecord(config) ? (config as CapturedToolConfig) : {};
    return this.#record((handle) => ({ kind: 'tool', name: toolName, config: toolConfig, callback: fn, handle }));
  }

  /** Records a resource at a fixed URI or a resource template, as McpServer.registerResource would register it. */
  registerResource(name: string, uriOrTemplate: string | ResourceTemplateLike, metadata: Readonly<Record<string, unknown>>, callback: CapturedCallback): CapturedHandle {
    const resourceName = requireName('resource', name);
    const fn = requireCallback('resource', resourceName, callback);
    if (!(typeof uriOrTemplate === 'string' && uriOrTemplate !== '') && !isResourceTemplate(uriOrTemplate)) {
      throw new TypeError(`resource ${resourceName}: the second argument must be a URI or a ResourceTemplate`);
    }
    const meta = isRecord(metadata) ? metadata : {};
    return this.#record((handle) => ({ kind: 'resource', name: resourceName, target: uriOrTemplate, metadata: meta, callback: fn, handle }));
  }

  /** Records a prompt, as McpServer.registerPrompt would register it. */
  registerPrompt(name: string, config: CapturedPromptConfig, callback: CapturedCallback): CapturedHandle {
    const promptName = requireName('prompt', name);
    const fn = requireCallback('prompt', promptName, callback);
    const promptConfig = isRecord(config) ? (config as CapturedPromptConfig) : {};
    return this.#record((handle) => ({ kind: 'prompt', name: promptName, config: promptConfig, callback: fn, handle }));
  }

  /** Records a tool given through the deprecated `tool(name, [description], [shape], [annotations], cb)` overloads. */
  tool(name: string, ...rest: unknown[]): CapturedHandle {
    const callback = takeCallback('tool', name, rest);
    const description = typeof rest[0] === 'string' ? (rest.shift() as string) : undefined;
    let inputSchema: unknown;
    let annotations: unknown;
    if (rest.length > 0) {
      const first = rest.shift();
      if (schemaKind(first) === 'zod-raw-shape') {
        inputSchema = first;
        if (isRecord(rest[0])) annotations = rest.shift();
      } else {
        annotations = first;
      }
    }
    const config: CapturedToolConfig = {
      ...(description === undefined ? {} : { description }),
      ...(inputSchema === undefined ? {} : { inputSchema }),
      ...(isRecord(annotations) ? { annotations } : {}),
    };
    return this.registerTool(name, config, callback);
  }

  /** Records a resource given through the deprecated `resource(name, uriOrTemplate, [metadata], cb)` overloads. */
  resource(name: string, ...rest: unknown[]): CapturedHandle {
    const callback = takeCallback('resource', name, rest);
    const [target, metadata] = rest;
    return this.registerResource(name, target as string | ResourceTemplateLike, isRecord(metadata) ? metadata : {}, callback);
  }

  /** Records a prompt given through the deprecated `prompt(name, [description], [argsSchema], cb)` overloads. */
  prompt(name: string, ...rest: unknown[]): CapturedHandle {
    const callback = takeCallback('prompt', name, rest);
    const description = typeof rest[0] === 'string' ? (rest.shift() as string) : undefined;
    const argsSchema = rest[0];
    const config: CapturedPromptConfig = {
      ...(description === undefined ? {} : { description }),
      ...(argsSchema === undefined ? {} : { argsSchema }),
    };
    return this.registerPrompt(name, config, callback);
  }

  /** Always false: the capture is never connected. */
  isConnected(): boolean {
    return false;
  }

  /** No-op: the real server announces changes when the plugin is registered. */
  sendToolListChanged(): void {}

  /** No-op, as {@link CaptureServer.sendToolListChanged}. */
  sendResourceListChanged(): void {}

  /** No-op, as {@link CaptureServer.sendToolListChanged}. */
  sendPromptListChanged(): void {}
}
