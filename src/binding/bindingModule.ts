import type { ResultAsync } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { VerifiedExecutable } from '../process/VerifiedExecutable.js';
import {
  bindExecutable,
  verifyExecutableBinding,
  type BindExecutableOptions,
  type ExecutableBindingRecord,
  type VerifyExecutableOptions,
} from './ExecutableBinding.js';
import { bindModuleEntry, verifyModuleEntry, type BindModuleEntryOptions, type VerifiedModuleEntry } from './ModuleEntryBinding.js';

/**
 * The design card's ExecutableBinding: at install, pins a plugin's code (an
 * executable with its `#!` interpreter, or an `esm-module` entry) by SHA-256
 * after refusing absolute paths, escapes from the install root, links,
 * shells and files others may write; before every spawn, verifies the pin
 * again (never cached) and hands back descriptors on exactly the bytes that
 * were hashed. A verification failure carries `details.quarantine: true`.
 */
export class ExecutableBinding {
  private constructor() {}

  /**
   * Pins an executable at install (`PLUGIN_EXECUTABLE_UNTRUSTED` with `details.reason` when refused). A `#!` Node
   * interpreter other than the host's own is not run to read its version: it gets `node_main: 'loader_hook'`, which
   * works on every Node (the host's own installs ask it inside the sandbox).
   */
  static bind(options: BindExecutableOptions): ResultAsync<ExecutableBindingRecord, HostError> {
    return bindExecutable(options);
  }

  /** Re-verifies a pinned executable before a spawn; the caller calls `release()` once the child is spawned. */
  static verify(record: ExecutableBindingRecord, options: VerifyExecutableOptions): ResultAsync<VerifiedExecutable, HostError> {
    return verifyExecutableBinding(record, options);
  }

  /** Pins an `esm-module` entry at install, with the executable refusals plus the ES module extensions. */
  static bindModuleEntry(options: BindModuleEntryOptions): ResultAsync<ExecutableBindingRecord, HostError> {
    return bindModuleEntry(options);
  }

  /** Re-verifies a pinned module entry before the ESM runner starts; the caller calls `release()` once it is spawned. */
  static verifyModuleEntry(record: ExecutableBindingRecord, options: VerifyExecutableOptions): ResultAsync<VerifiedModuleEntry, HostError> {
    return verifyModuleEntry(record, options);
  }
}
