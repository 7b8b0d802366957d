/**
 * The tool list each plugin's pinned code listed at a start that was checked
 * before its first call, kept in the profile (host-private, hidden from
 * every plugin's sandbox) so that a later cold start of the same code can
 * send its first call right after `initialize` and check `tools/list` beside
 * it (McpConnection ends the connection if the two disagree).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ListToolsResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { Logger, Random } from '../ports/ports.js';
import type { McpToolRecord } from '../shapes/mcp/McpConnection.js';

const RECORDS_DIR = 'tool-lists';

interface StoredList {
  readonly pins: string;
  readonly tools: readonly Tool[];
  /** This code listed other tools at a start that used the record: every start of it checks first, and none records. */
  readonly varies?: true;
}

/**
 * What pins a plugin's code and its declared tools: its whole `plugins.lock`
 * entry (package digest, binding with its tree digest and entry digest,
 * grant) and the manifest's tool names. Any change gives another digest.
 */
function pinsOf(plugin: InstalledPlugin, declaredTools: readonly string[]): string {
  return createHash('sha256')
    .update(JSON.stringify({ lock: plugin.lock, tools: [...declaredTools].sort() }))
    .digest('hex');
}

/** One profile's recorded tool lists, by plugin id, read from disk once per plugin and pins. */
export class ToolListRecords {
  readonly #dir: string;
  readonly #known = new Map<string, StoredList | undefined>();
  /** Records being written, so that closing the host waits for them (a record may not appear after close). */
  readonly #writing = new Set<Promise<void>>();

  constructor(
    profileRoot: string,
    private readonly logger: Logger,
    private readonly random: Random,
  ) {
    this.#dir = join(profileRoot, RECORDS_DIR);
  }

  /** The record a session of `plugin` reads and writes. */
  recordFor(plugin: InstalledPlugin, declaredTools: readonly string[]): McpToolRecord {
    const id = plugin.plugin_id;
    const pins = pinsOf(plugin, declaredTools);
    const file = this.fileOf(id);
    return {
      load: async () => {
        const key = `${id}\n${pins}`;
        if (!this.#known.has(key)) this.#known.set(key, await this.read(file, pins));
        const known = this.#known.get(key);
        return known?.varies === true ? undefined : known?.tools;
      },
      save: (tools) => {
        if (this.#known.get(`${id}\n${pins}`)?.varies === true) return;
        this.store(id, file, { pins, tools });
      },
      varies: () => this.store(id, file, { pins, tools: [], varies: true }),
      forget: () => {
        this.#known.set(`${id}\n${pins}`, undefined);
        unlink(file).catch(() => undefined);
      },
    };
  }

  /** Remembers `stored` for the plugin's pins and writes it, so that closing the host waits for the file. */
  private store(id: string, file: string, stored: StoredList): void {
    this.#known.set(`${id}\n${stored.pins}`, stored);
    const writing = this.write(file, stored).finally(() => this.#writing.delete(writing));
    this.#writing.add(writing);
  }

  /** Settles once every record being written is in place (or given up, as logged). */
  async settled(): Promise<void> {
    while (this.#writing.size > 0) await Promise.all(this.#writing);
  }

  /** Drops a removed plugin's record: no later install can match its pins, so it would only linger. */
  async discard(pluginId: string): Promise<void> {
    for (const key of this.#known.keys()) if (key.startsWith(`${pluginId}\n`)) this.#known.delete(key);
    await unlink(this.fileOf(pluginId)).catch(() => undefined);
  }

  private fileOf(pluginId: string): string {
    return join(this.#dir, `${encodeURIComponent(pluginId)}.json`);
  }

  private async read(file: string, pins: string): Promise<StoredList | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(file, 'utf8'));
    } catch {
      return undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || (parsed as { pins?: unknown }).pins !== pins) return undefined;
    if ((parsed as { varies?: unknown }).varies === true) return { pins, tools: [], varies: true };
    const tools = ListToolsResultSchema.safeParse({ tools: (parsed as { tools?: unknown }).tools });
    return tools.success ? { pins, tools: tools.data.tools } : undefined;
  }

  private async write(file: string, stored: StoredList): Promise<void> {
    const temp = `${file}.${Buffer.from(this.random.bytes(8)).toString('hex')}.tmp`;
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      await writeFile(temp, JSON.stringify(stored), { mode: 0o600 });
      await rename(temp, file);
    } catch (error) {
      unlink(temp).catch(() => undefined);
      this.logger.warn({ file, error: String(error) }, 'could not record the verified tool list; the next start checks it before its call');
    }
  }
}
