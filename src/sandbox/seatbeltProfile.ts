import type { SandboxLayout } from './SandboxLayout.js';

/** System directories a macOS process needs to read to start at all. */
export const DARWIN_SYSTEM_PATHS: readonly string[] = ['/usr', '/bin', '/sbin', '/System', '/private/etc', '/Library/Apple', '/private/var/db/timezone', '/private/var/db/dyld'];

/** Mach services of libSystem a plain CLI process needs (user lookup, logging, notifications), not the keychain. */
const MACH_SERVICES = ['com.apple.system.opendirectoryd.libinfo', 'com.apple.system.logger', 'com.apple.system.notification_center', 'com.apple.logd'];

/** Mach services TLS clients need, granted only with network access. */
const NETWORK_MACH_SERVICES = ['com.apple.trustd.agent', 'com.apple.SystemConfiguration.configd', 'com.apple.dnssd.service'];

const DEVICES = ['/dev/null', '/dev/zero', '/dev/random', '/dev/urandom', '/dev/dtracehelper'];

/** A string literal of the Seatbelt profile language (a Scheme dialect). */
function quote(text: string): string {
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

const subpaths = (paths: readonly string[]): string[] => paths.map((p) => `(subpath ${quote(p)})`);
const literals = (paths: readonly string[]): string[] => paths.map((p) => `(literal ${quote(p)})`);
const rule = (head: string, filters: readonly string[]): string => (filters.length === 0 ? '' : `(${head}\n  ${filters.join('\n  ')})`);

/**
 * The Seatbelt profile (`sandbox-exec -p`) enforcing a layout on macOS:
 * deny by default; read and execute only system paths, the install root and
 * the read-only paths; write only the write directory; no network (which on
 * macOS also covers Unix socket connections) unless `network` is true;
 * secret and hidden paths denied last, so they win over the allows above.
 */
export function seatbeltProfile(layout: SandboxLayout): string {
  const system = layout.system.map((m) => m.path);
  const readable = [...system, ...layout.readOnly, layout.installRoot, layout.writeDir];
  const masks = [...layout.masksOutside, ...layout.masksInside];
  const maskFilters = [...subpaths(masks.filter((m) => m.kind === 'dir').map((m) => m.path)), ...literals(masks.filter((m) => m.kind === 'file').map((m) => m.path))];
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-fork)',
    rule('allow process-exec', subpaths([...system, ...layout.readOnly, layout.installRoot])),
    '(allow signal (target same-sandbox))',
    '(allow sysctl-read)',
    rule('allow mach-lookup', MACH_SERVICES.map((s) => `(global-name ${quote(s)})`)),
    // Existence and metadata of any path (realpath walks the tree); contents stay denied.
    '(allow file-read-metadata)',
    rule('allow file-read*', [...subpaths(readable), ...literals(DEVICES)]),
    rule('allow file-write*', [...subpaths([layout.writeDir]), ...literals(['/dev/null'])]),
    '(allow file-ioctl (literal "/dev/null"))',
  ];
  if (layout.network) {
    lines.push(
      '(allow network*)',
      '(allow system-socket)',
      rule('allow mach-lookup', NETWORK_MACH_SERVICES.map((s) => `(global-name ${quote(s)})`)),
    );
  }
  lines.push(rule('deny file-read* file-write* process-exec', maskFilters));
  return `${lines.filter((l) => l !== '').join('\n')}\n`;
}
