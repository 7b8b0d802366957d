import { hostError, type HostError } from '../errors/HostError.js';

/** Why an executable binding was refused, in `details.reason` of `PLUGIN_EXECUTABLE_UNTRUSTED`. */
export type UntrustedReason =
  | 'invalid_path'
  | 'absolute_path'
  | 'path_traversal'
  | 'missing'
  | 'link'
  | 'outside_install_root'
  | 'not_regular_file'
  | 'unsafe_permissions'
  | 'shell_interpreter'
  | 'unsupported_format'
  | 'unsupported_shebang'
  | 'interpreter_not_found'
  | 'interpreter_not_native'
  | 'interpreter_argument'
  | 'interpreter_location'
  | 'binding_inconsistent'
  | 'changed_during_verification'
  | 'digest_mismatch'
  | 'interpreter_digest_mismatch'
  | 'file_changed'
  | 'file_added'
  | 'file_removed';

/**
 * A `PLUGIN_EXECUTABLE_UNTRUSTED` error with its reason and facts; `hint`
 * replaces the code's own ("Ship a real entry-point file inside the
 * package…") where the remedy is not the package's.
 */
export function untrusted(reason: UntrustedReason, message: string, details: Record<string, unknown> = {}, hint?: string): HostError {
  return hostError('PLUGIN_EXECUTABLE_UNTRUSTED', message, { details: { reason, ...details }, ...(hint === undefined ? {} : { hint }) });
}
