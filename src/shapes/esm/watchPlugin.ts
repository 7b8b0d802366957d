import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { HostError } from '../../errors/HostError.js';
import type { EsmPlugin, EsmReloadResult } from './EsmPlugin.js';

/** The outcome of one hot reload. */
export type EsmReloadEvent =
  | { readonly ok: true; readonly plugin: string; readonly result: EsmReloadResult }
  | { readonly ok: false; readonly plugin: string; readonly error: HostError; readonly runningVersion: string };

/** Options of {@link watchPlugin}. */
export interface WatchPluginOptions {
  /** Quiet time after the last change before reloading, in ms. Default 150. */
  readonly debounceMs?: number;
}

/** A running watch; {@link PluginWatcher.close} stops it. */
export interface PluginWatcher {
  /** Stops watching; a reload already started still finishes and reports. */
  close(): void;
}

/** Default quiet time before a reload. */
export const DEFAULT_RELOAD_DEBOUNCE_MS = 150;

/**
 * Hot reload, opt-in: watches a loaded plugin's entry and `mcp-plugin.json`
 * and, once changes settle, reloads it (revalidate, fresh preflight,
 * re-register). A broken change leaves the last good version registered;
 * `onReload` hears about every attempt either way.
 *
 * The directories holding the two files are watched rather than the files,
 * because editors and build tools replace files by rename. Only the entry
 * file itself is re-evaluated: modules it imports stay in Node's cache, so
 * ship the entry as one bundle to reload all of it. Each reload keeps the
 * previous module instance in memory.
 */
export function watchPlugin(plugin: EsmPlugin, onReload: (event: EsmReloadEvent) => void, options: WatchPluginOptions = {}): PluginWatcher {
  const debounceMs = options.debounceMs ?? DEFAULT_RELOAD_DEBOUNCE_MS;
  const watched = new Map<string, Set<string>>();
  for (const file of [plugin.entryPath, plugin.manifestPath]) {
    const names = watched.get(dirname(file)) ?? new Set<string>();
    names.add(basename(file));
    watched.set(dirname(file), names);
  }
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const reload = (): void => {
    timer = undefined;
    void plugin.reload().match(
      (result) => onReload({ ok: true, plugin: plugin.id, result }),
      (error) => onReload({ ok: false, plugin: plugin.id, error, runningVersion: plugin.version }),
    );
  };
  const watchers: FSWatcher[] = [...watched].map(([dir, names]) =>
    watch(dir, { persistent: false }, (_event, file) => {
      if (closed || (file !== null && !names.has(file.toString()))) return;
      clearTimeout(timer);
      timer = setTimeout(reload, debounceMs);
    }),
  );
  return {
    close(): void {
      closed = true;
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
