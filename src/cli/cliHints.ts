import type { HostError } from '../index.js';
import { PROGRAM } from './help.js';

/**
 * The registry hint says what to do in library terms; this says which flag
 * or command does it here. `undefined` when the registry hint is enough.
 */
export function cliHint(error: HostError, pluginId: string | undefined): string | undefined {
  const reason = error.details.reason;
  const id = typeof error.details.plugin_id === 'string' ? error.details.plugin_id : (pluginId ?? '<name>');
  switch (error.code) {
    case 'PLUGIN_SOURCE_NOT_ALLOWED':
      return 'directories install only into dev profiles: add --dev, or pack the plugin as a .tgz or .zip';
    case 'PLUGIN_CHECKSUM_MISMATCH':
    case 'PLUGIN_SIGNATURE_INVALID':
      if (reason === 'directory_source') return 'a directory has no checksum or signature: leave --checksum and --signature out with --dev, or pack the plugin as a .tgz or .zip';
      if (reason === 'missing' && error.code === 'PLUGIN_CHECKSUM_MISMATCH') return 'pass --checksum sha256:<hex> (or --dev for a local test install)';
      if (reason === 'missing') return 'pass --signature <file> or ship <archive>.sig';
      if (reason === 'signer_changed') return 'sign with the key that signed the installed version, or pass --allow-signer-change if the publisher changed keys';
      return undefined;
    case 'PLUGIN_NAMESPACE_CONFLICT':
      return 'in a dev profile only: --dev --dev-allow-namespace-conflict';
    case 'PLUGIN_ALREADY_INSTALLED':
      return 'the same version from other bytes: pass --force to replace it, or install a new version';
    case 'PLUGIN_DOWNGRADE_REFUSED':
      return 'pass --allow-downgrade to install the lower version anyway';
    case 'PLUGIN_RISK_NOT_ALLOWED':
      return `pass --max-risk ${typeof error.details.risk_class === 'string' ? error.details.risk_class : 'write'} if you mean it`;
    case 'PLUGIN_CONFIRMATION_DENIED':
      return 'pass --yes to confirm, or run on a terminal to be asked';
    case 'PLUGIN_NEEDS_CONFIGURATION':
    case 'AUTH_REQUIRED':
      return `${PROGRAM} setup ${id}`;
    case 'PLUGIN_QUARANTINED':
    case 'VARIANT_QUARANTINED':
      return `${PROGRAM} reload ${id} (or unquarantine ${id}) once the cause is fixed`;
    case 'PLUGIN_NOT_FOUND':
    case 'VARIANT_NOT_FOUND':
      return `${PROGRAM} list shows what is installed; ${PROGRAM} info <name> its operations`;
    case 'PLUGIN_EXECUTABLE_UNTRUSTED':
      if (typeof error.details.found_on_path === 'string') return `put the directory of the real interpreter before ${error.details.found_on_path} on PATH`;
      return undefined;
    case 'PLUGIN_TIMEOUT':
      return timeoutHint(error);
    case 'HOST_INVALID_OPTIONS':
      // The host names its option (profile, appName); here the user typed a flag, and a path belongs in --profile-dir.
      if (error.details.option === 'profile') return 'give --profile one directory name (such as work), or a path with --profile-dir <dir>';
      if (error.details.option === 'appName') return 'give --app-name one directory name (such as my-agent), or a path with --profile-dir <dir>';
      if (error.details.option === 'npm.registry') return 'give --registry the URL of an npm registry (http:// or https://, such as https://registry.npmjs.org/)';
      return undefined;
    default:
      return undefined;
  }
}

/**
 * A call that ran out of --timeout. The default (callTimeoutMs, 30 s) is also
 * what many clients wait for their own service (the MongoDB driver's server
 * selection retries a refused connect for 30 s), so such a server answers its
 * own error just after the host gave up, often with nothing on stderr
 * meanwhile: the hint says how long the call waited and what a longer wait
 * shows, rather than only "raise --timeout".
 */
function timeoutHint(error: HostError): string {
  const waited = error.details.timeout_ms;
  if (error.details.phase !== 'tools/call' || typeof waited !== 'number') return 'raise --timeout <ms>';
  const tail = error.details.stderr_tail;
  const silent = typeof tail === 'string' && tail.trim() === '' ? ', and the plugin wrote nothing on stderr meanwhile' : '';
  return `raise --timeout <ms>: the call waited ${waited} ms${silent}. A server that waits as long for a service of its own (a database driver's connect or server-selection timeout, often 30 s) answers with its own error just after: --timeout ${waited * 2} shows it`;
}
