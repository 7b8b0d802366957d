import { join } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { ClientRequestKind } from '../manifest/model.js';
import type { TrustCallback } from './trust.js';
import { ioError } from '../errors/ioError.js';
import { DEFAULT_PARSE_LIMITS } from '../manifest/parse.js';
import { violation, violationsError } from '../manifest/violations.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { openNpmSource, type NpmSourceOptions } from './openNpmSource.js';

/** Options of `PluginHost.wrap`. */
export interface WrapOptions {
  /** Arguments the server is started with for its introspection; `${data_dir}` stands for its data directory. */
  readonly args?: readonly string[];
  /** The package's bin to run as its server, as the install option `bin` names it (a second executable such as `<name>-mcp`). */
  readonly bin?: string;
  /** Client requests to announce at its `initialize`, as an install granting them would (a server may list tools only for a client that answers them). */
  readonly clientRequests?: readonly ClientRequestKind[];
  /** Host env names passed with the host's values to its start, as an install granting them (`env_allow`) would; a denylisted name is refused (PLUGIN_ENV_PROHIBITED) before npm runs. */
  readonly env?: readonly string[];
  /** The whole network for its start, as an install granting `network: true` would (a server that connects while it starts). */
  readonly network?: boolean;
  /** Destinations its start may reach through the host's egress proxy, as an install granting `egress` would. */
  readonly egress?: readonly string[];
  /**
   * Asked before a start with network (`network`, or any `egress`), once the
   * package is fetched and before any of its code runs, with the install's
   * introspection-stage question (`stage: 'introspection'`, no tools yet); a
   * decline ends the wrap with PLUGIN_TRUST_DECLINED. Absent: asking for the
   * network is the consent.
   */
  readonly accept?: TrustCallback;
}

/** The manifest an `npm:` server would be installed with, for a person to review. */
export interface WrappedServer {
  /** The package and version npm resolved, as `<name>@<version>` (or the tarball's path). */
  readonly source: string;
  /** The manifest's file name (`manifest.json` when generated). */
  readonly manifestFile: string;
  /** The manifest text, as the install would read it. */
  readonly manifestText: string;
  /** Whether the package ships it (`package`) or the host generated it from the server's `tools/list` (`introspection`). */
  readonly origin: 'package' | 'introspection';
  /** True when the host generated the manifest: its risk classes come from the server's own annotations and nobody has reviewed them. */
  readonly needs_review: boolean;
}

async function wrap(source: string, options: Omit<NpmSourceOptions, 'manifest'>): Promise<Result<WrappedServer, HostError>> {
  const staged = await openNpmSource(source, options);
  if (staged.isErr()) return err(staged.error);
  const { root, manifestFile, manifestOrigin, discard } = staged.value;
  try {
    const bytes = await readAtMost(join(root, manifestFile), DEFAULT_PARSE_LIMITS.maxBytes);
    if (bytes.length > DEFAULT_PARSE_LIMITS.maxBytes) {
      return err(violationsError(manifestFile, [violation('parse', 'PLUGIN_MANIFEST_INVALID', '', `manifest is over the ${DEFAULT_PARSE_LIMITS.maxBytes}-byte limit`)]));
    }
    const manifestText = bytes.toString('utf8');
    const origin = manifestOrigin === 'package' ? 'package' : 'introspection';
    return ok({ source: staged.value.source.path, manifestFile, manifestText, origin, needs_review: origin === 'introspection' });
  } catch (cause) {
    return err(ioError('Reading the manifest of', source, cause));
  } finally {
    await discard().catch(() => undefined);
  }
}

/**
 * Fetches and stages an `npm:` source as an install would (without a caller
 * manifest), reads the manifest it would be installed with, and discards the
 * staging: nothing is installed. A shipped manifest over the manifest size
 * limit is PLUGIN_MANIFEST_INVALID, read no further than that limit.
 */
export function wrapNpmSource(source: string, options: Omit<NpmSourceOptions, 'manifest'>): ResultAsync<WrappedServer, HostError> {
  return new ResultAsync(wrap(source, options));
}
