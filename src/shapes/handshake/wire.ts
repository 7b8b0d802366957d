/**
 * Wire types of the one-shot handshake protocol (seed 004). Each launch
 * carries exactly four lines of JSON: handshake request, handshake response,
 * execute request, execute response. The seed names the messages; their
 * fields beyond the manifest's are this library's choice, documented in
 * docs/protocols-ndjson-and-handshake.md.
 */

import type { HandshakeManifest } from '../../manifest/model.js';

export type { HandshakeManifest };

/** The protocol version the host requests unless a plugin spec names another. */
export const HANDSHAKE_PROTOCOL_VERSION = 'handshake/v1';

/** Host to plugin, first line after launch. */
export interface PluginHandshakeRequest {
  /** Always `"handshake"`. */
  readonly type: 'handshake';
  /** The protocol version the host requests; the manifest must carry the same. */
  readonly protocol_version: string;
  /** The tool the host is about to execute; absent when the host only asks for the manifest. */
  readonly tool?: string;
  /** The host-owned capability allow-list for this plugin binding; the plugin may request a subset. */
  readonly allowed_capabilities: readonly string[];
}


/** Plugin to host: exactly one line, right after the handshake request. */
export interface PluginHandshakeResponse {
  /** Always `"handshake"`. */
  readonly type: 'handshake';
  /** The manifest. */
  readonly manifest: HandshakeManifest;
}

/** Host to plugin: the one execute request of this launch. */
export interface PluginRequest {
  /** Always `"execute"`. */
  readonly type: 'execute';
  /** A random id the response must echo (a plugin cannot answer before reading it). */
  readonly request_id: string;
  /** The tool to run; one of `exposed_tools`. */
  readonly tool: string;
  /** The tool's arguments (`{}` when the caller passed none). */
  readonly input: unknown;
}

/** A plugin's own failure, returned inside a well-formed response. */
export interface PluginError {
  /** The plugin's error code (non-empty). */
  readonly code: string;
  /** What went wrong (non-empty). */
  readonly message: string;
  /** Anything else the plugin attaches. */
  readonly data?: unknown;
}

/** Plugin to host: exactly one line answering the execute request. */
export type PluginResponse =
  | { readonly type: 'response'; readonly request_id: string; readonly ok: true; readonly result: unknown }
  | { readonly type: 'response'; readonly request_id: string; readonly ok: false; readonly error: PluginError };
