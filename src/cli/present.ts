import type { CanaryOutcome, InventoryStatus, PluginInfo, TrustRequest } from '../index.js';
import layout from '../../etc/cli-terminal.json' with { type: 'json' };
import { isAbsolute } from 'node:path';
import { columns, oneLineField, type Style } from './style.js';
import { registryChangeText } from '../installer/trustRegistry.js';

// An npm source's path is the `<name>@<version>` the registry resolved, or a local tarball's absolute path: the
// tarball's name, version and owner are its own package.json's claims, so it is never shown as the package it names.
const isLocalNpmTarball = (kind: string, path: string): boolean => kind === 'npm' && isAbsolute(path);
const localTarball = (path: string): string => `local npm tarball ${path}`;
const claimedOwner = (owner: string): string => `${owner} (claimed by the tarball's package.json, not checked against the npm registry)`;

/** A canary outcome as JSON: `error` is always present, `null` on success. */
export function canaryJson(outcome: CanaryOutcome): Record<string, unknown> {
  return { plugin_id: outcome.plugin_id, mode: outcome.mode, status: outcome.status, error: outcome.error?.toJSON() ?? null };
}

/** `passed (live)` / `failed (passive): CODE message`, coloured. */
export function canarySummary(outcome: CanaryOutcome, style: Style): string {
  const status =
    outcome.status === 'passed' ? style.green('passed') : outcome.status === 'failed' ? style.red('failed') : style.yellow('skipped');
  // The message may quote the plugin over several lines; the summary is one line of the CLI's.
  const why = outcome.error === undefined ? '' : `: ${outcome.error.code} ${oneLineField(outcome.error.message)}`;
  return `${status} (${outcome.mode})${why}`;
}

/** An inventory status, coloured by how usable it is. */
export function statusText(status: InventoryStatus | string, style: Style): string {
  switch (status.split(' ')[0]) {
    case 'active':
      return style.green(status);
    case 'quarantined':
      return style.red(status);
    default:
      return style.yellow(status);
  }
}

/**
 * `text` cut into pieces of at most `width` terminal columns. A code point
 * outside ASCII counts as two (as a wide one takes), so a piece never runs
 * past the width, whatever the text holds.
 */
function wrapToColumns(text: string, width: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  let used = 0;
  for (const char of text) {
    const cost = char.charCodeAt(0) < 0x80 ? 1 : 2;
    if (used + cost > width && piece !== '') {
      pieces.push(piece);
      piece = '';
      used = 0;
    }
    piece += char;
    used += cost;
  }
  return [...pieces, piece];
}

/** The tools row: how many of each risk class, then each tool (cut by {@link cutToLines} when long). */
function toolsText(tools: TrustRequest['tools']): string {
  const count = (risk: string): number => tools.filter((t) => t.risk_class === risk).length;
  const classes = ['read', 'write', 'destructive'].map((risk) => `${count(risk)} ${risk}`).join(', ');
  return `${tools.length} (${classes}): ${tools.map((t) => `${t.name} (${t.risk_class})`).join(', ')}`;
}

/**
 * A row's wrapped pieces, at most `maxRowLines` (etc/cli-terminal.json) of
 * them: the last one kept says how much was left out.
 */
function cutToLines(pieces: readonly string[], width: number): string[] {
  if (pieces.length <= layout.maxRowLines) return [...pieces];
  const kept = pieces.slice(0, layout.maxRowLines - 1);
  const rest = pieces.slice(layout.maxRowLines - 1).join('');
  // Room for the note on the last line: a space, the ellipsis (two columns, as wrapToColumns counts it) and the count.
  const noteWidth = (left: number): number => ` … ${left} more characters not shown`.length + 1;
  const shown = wrapToColumns(rest, Math.max(1, width - noteWidth([...rest].length)))[0] ?? '';
  return [...kept, `${shown} … ${[...rest].length - [...shown].length} more characters not shown`];
}

/**
 * What an install asks a person to accept: who publishes it, its terms, its
 * risk and its powers, a row each. Each row is wrapped to `terminalColumns`
 * (unknown: etc/cli-terminal.json) by the CLI, its continuations starting at
 * the value column: a package's text that ran past the terminal's edge would
 * otherwise go on at the key column of the next line, where padding could
 * make it pass for a row of its own (`network  no`).
 */
export function trustLines(request: TrustRequest, terminalColumns?: number): string[] {
  const caps = request.capabilities;
  const tarball = isLocalNpmTarball(request.source, request.source_path);
  const network = caps.network ? 'yes' : caps.egress === undefined || caps.egress.length === 0 ? 'no' : `only ${caps.egress.join(', ')}`;
  const rows: [string, string][] = [
    ['plugin', `${request.display_name} ${request.version} (${request.plugin_id}, from ${tarball ? `${localTarball(request.source_path)}, not the npm registry` : `a ${request.source} package`})`],
    ['namespace owner', request.namespace_owner === null ? 'none declared' : tarball ? claimedOwner(request.namespace_owner) : request.namespace_owner],
    // The same name on another registry may be another publisher's package, whatever owner it claims: shown beside the owner.
    ...(request.registry_change === undefined ? [] : [['npm registry', `${registryChangeText(request.registry_change)}, not the one the version accepted before came from`] as [string, string]]),
    ...(request.package_change === undefined
      ? []
      : [['npm package', `${request.package_change.to}, not ${request.package_change.from} the plugin was accepted as: it takes over that plugin's data and env grants`] as [string, string]]),
    ['terms of service', request.tos ?? 'none stated'],
    ['risk', request.risk ?? 'none stated'],
    ['license', request.license ?? 'none declared'],
    // Before its one start with network, the server has listed nothing yet: the install asks again once it has.
    ['tools', request.stage === 'introspection' ? 'not listed yet: it starts once, with this network, to list them' : toolsText(request.tools)],
    // The powers come last, right above the question: rows before them are cut to a few lines (maxRowLines), so no text
    // of the package's (a thousand tools, a long license) pushes them off the screen the question is answered on.
    ['network', network],
    ['writes', caps.fs_write_dir === '' ? 'its own data directory' : `its data directory and ${caps.fs_write_dir}`],
    // Powers the plugin gets beside the sandbox's: the values of these names in the environment of the process that
    // starts it, and requests answered by the application (its model, its user). Left out, a package declaring them
    // was accepted by a question that never named them.
    ['host env', caps.env_allow.length === 0 ? 'none' : `${caps.env_allow.join(', ')} (the values your environment sets for them)`],
    ['client requests', caps.client_requests === undefined || caps.client_requests.length === 0 ? 'none' : `${caps.client_requests.join(', ')} (answered by the application that runs it)`],
    ...(request.credentials === undefined ? [] : [['credentials', `${request.credentials.join(', ')} (the values you give it with setup)`] as [string, string]]),
  ];
  const keyWidth = Math.max(...rows.map(([key]) => key.length));
  const valueColumn = 2 + keyWidth + 2;
  const width = terminalColumns === undefined || terminalColumns <= 0 ? layout.columnsWhenUnknown : terminalColumns;
  const valueWidth = Math.max(layout.minValueColumns, width - valueColumn);
  const lines = rows.flatMap(([key, value]) =>
    cutToLines(wrapToColumns(oneLineField(value), valueWidth), valueWidth).map((piece, index) => `${index === 0 ? `  ${key.padEnd(keyWidth)}  ` : ' '.repeat(valueColumn)}${piece}`.trimEnd()),
  );
  return ['This plugin runs as code with your user\'s authority, inside the sandbox:', ...lines];
}

/**
 * The question under {@link trustLines}: what the install (or, `stage:
 * 'introspection'`, the one start before it that lists the tools) is asked
 * to accept, naming each change against the version accepted before by what
 * it is (another npm registry or package, new powers, tools rated lower), as
 * the start of another registry's package is asked before any of its code
 * runs. The plugin is named by its id, a short checked name: a package's own
 * text in the question could run past the edge and pose as a row above it.
 */
export function trustQuestion(request: TrustRequest): string {
  const changed = [
    ...(request.registry_change === undefined ? [] : ['this other npm registry']),
    ...(request.package_change === undefined ? [] : ['this other npm package']),
    ...((request.added_capabilities ?? []).length > 0 ? ['these new powers'] : []),
    ...((request.risk_changes ?? []).length > 0 ? ['these tools rated lower'] : []),
  ].join(' and ');
  if (request.stage === 'introspection') {
    return changed === '' ? `Start ${request.plugin_id} once with this network to list its tools?` : `Start ${request.plugin_id} once, with ${changed}, with this network to list its tools?`;
  }
  return changed === '' ? `Install ${request.plugin_id} and run it with these powers?` : `Install ${request.plugin_id} with ${changed}?`;
}

/** The auth components as checklist lines: secrets by credential alias, external prerequisites the host cannot complete. */
export function authChecklist(info: PluginInfo): string[] {
  return info.auth_components.map((c) => {
    const what = c.kind === 'secret' ? `stored by setup as ${c.credential ?? '-'}` : 'complete it outside this host';
    return `${c.display_name} (${c.kind}; ${what})${c.setup_hint === undefined ? '' : ` — ${c.setup_hint}`}`;
  });
}

/** The `info` view for people: aligned key/value lines. */
export function infoLines(info: PluginInfo, style: Style): string[] {
  const caps = info.enforced_capabilities;
  const [kind = '', ...pathParts] = info.package.source.split(':');
  const tarballPath = isLocalNpmTarball(kind, pathParts.join(':')) ? pathParts.join(':') : undefined;
  const rows: [string, string][] = [
    ['name', info.name],
    ['display name', info.display_name],
    ['version', info.version],
    ['shape', info.shape],
    ['status', info.status + (info.reason === null ? '' : ` (${info.reason})`)],
    ['description', info.description ?? '-'],
    ['namespace owner', info.namespace_owner === null ? '-' : tarballPath === undefined ? info.namespace_owner : claimedOwner(info.namespace_owner)],
    ['operations', info.operations.map((o) => o.op_id).join(', ') || '-'],
    ['executable', `${info.executable.path}  sha256:${info.executable.sha256}`],
    ['install root', info.executable.install_root],
    ['package', `${tarballPath === undefined ? info.package.source : localTarball(tarballPath)}${info.package.checksum === '' ? '' : `  ${info.package.checksum}`}`],
    ['installed at', info.installed_at ?? '-'],
    ['activated at', info.activated_at ?? '-'],
  ];
  // The npm bin the install chose (--bin): which of the package's programs runs as the server, and which an upgrade runs again.
  if (info.package.bin !== undefined) rows.splice(rows.findIndex(([key]) => key === 'package') + 1, 0, ['npm bin', `${info.package.bin} (install --bin; an upgrade runs it again)`]);
  if (info.quarantined_at !== null) rows.push(['quarantined at', info.quarantined_at]);
  if (info.last_error_code !== null) rows.push(['last error', info.last_error_code]);
  if (info.tos !== null) rows.push(['terms of service', info.tos]);
  if (info.risk !== null) rows.push(['risk', info.risk]);
  for (const c of info.credential_descriptors) rows.push(['credential', `${c.alias} (${c.kind}): ${c.display_name} — ${c.setup_hint}`]);
  if (info.auth_strategy !== null) rows.push(['auth', info.auth_strategy]);
  for (const line of authChecklist(info)) rows.push(['auth component', line]);
  const granted = info.granted_capabilities;
  if (granted?.grant != null) rows.push(['granted', `${JSON.stringify(granted.grant)} (${granted.basis === 'declared' ? 'narrowing the manifest' : 'over the host default'})`]);
  if (granted?.client_requests !== undefined) rows.push(['client requests', `${granted.client_requests.join(', ')} (answered by the host application)`]);
  for (const [key, value] of Object.entries(info.settings ?? {})) rows.push(['setting', `${key} = ${JSON.stringify(value)}`]);
  for (const key of info.missing_settings) rows.push(['setting', style.yellow(`${key} missing (install again with --setting ${key}=...)`)]);
  if (caps !== null) {
    const network = caps.network ? 'on' : caps.egress === undefined ? 'off' : `only ${caps.egress.join(', ')} (egress proxy)`;
    rows.push(['sandbox', caps.enforced ? `${caps.backend}, network ${network}` : style.red('NOT ENFORCED')]);
    rows.push(['writable', caps.writablePaths.join(', ') || '-']);
  }
  if (info.metadata_warning !== undefined) rows.push(['warning', style.yellow(info.metadata_warning)]);
  const shown = rows.map(([key, value]): [string, string] => [key, oneLineField(value)]);
  return columns(shown, (text, r, c) => (c === 0 ? style.dim(text) : r === 4 && c === 1 ? statusText(text, style) : text));
}
