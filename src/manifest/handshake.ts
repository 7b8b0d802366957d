/**
 * Structure of the manifest a handshake-shape plugin sends in its handshake
 * response, and the hygiene of its capability list. Whether the protocol
 * version matches, the requested tool is exposed and the capabilities fit
 * the host allow-list is decided by the handshake protocol, not here.
 */
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { isRecord, own, ownStrings } from './access.js';
import type { HandshakeManifest } from './model.js';
import { ajvViolations, bundledValidator } from './schemas.js';
import { hasViolations, pointerOf, sortViolations, violation, violationsError, type Violation } from './violations.js';

/**
 * Capability values that are empty, padded with whitespace, or repeated.
 * The seed rejects all three; each is reported with its own pointer.
 */
export function checkCapabilityHygiene(manifest: unknown): Violation[] {
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const { index, value } of ownStrings(manifest, 'capabilities')) {
    const at = pointerOf('capabilities', index);
    if (value.trim() === '') out.push(violation('structure', 'PLUGIN_HANDSHAKE_FAILED', at, 'capability is empty'));
    else if (value.trim() !== value) {
      out.push(violation('structure', 'PLUGIN_HANDSHAKE_FAILED', at, `capability ${JSON.stringify(value)} is padded with whitespace`));
    } else if (seen.has(value)) {
      out.push(violation('structure', 'PLUGIN_HANDSHAKE_FAILED', at, `capability ${JSON.stringify(value)} is declared twice`));
    }
    seen.add(value);
  }
  return out;
}

/**
 * Validates a handshake manifest: required `plugin_id`, `plugin_version`,
 * `protocol_version`, `exposed_tools`; optional `capabilities` without empty,
 * whitespace-padded or duplicate values. Every failure is
 * PLUGIN_HANDSHAKE_FAILED with all violations in `details.violations`.
 */
export function validateHandshakeManifest(value: unknown): Result<HandshakeManifest, HostError> {
  const schema = bundledValidator('handshake');
  const violations = sortViolations([
    ...(schema(value) ? [] : ajvViolations('handshake', schema.errors, 'PLUGIN_HANDSHAKE_FAILED')),
    ...checkCapabilityHygiene(value),
  ]);
  if (hasViolations(violations) || !isRecord(value)) {
    return err(
      violationsError(
        'handshake manifest',
        hasViolations(violations) ? violations : [violation('structure', 'PLUGIN_HANDSHAKE_FAILED', '', 'must be an object')],
      ),
    );
  }
  const manifest: HandshakeManifest = {
    plugin_id: own(value, 'plugin_id') as string,
    plugin_version: own(value, 'plugin_version') as string,
    protocol_version: own(value, 'protocol_version') as string,
    exposed_tools: ownStrings(value, 'exposed_tools').map((t) => t.value),
  };
  return ok(
    own(value, 'capabilities') === undefined
      ? manifest
      : { ...manifest, capabilities: ownStrings(value, 'capabilities').map((c) => c.value) },
  );
}
