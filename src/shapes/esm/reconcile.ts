import type { NormalizedManifest } from '../../manifest/model.js';
import type { CapturedRegistration } from './CaptureServer.js';

/** Which kind of capability a mismatch concerns. */
export type CapabilityKind = 'tool' | 'resource' | 'prompt';

/** One difference between what a manifest declares and what `createPlugin` registered. */
export interface CapabilityMismatch {
  /** `declared-not-registered`, `registered-not-declared`, or `uri-differs` (a resource registered at another URI or template). */
  readonly problem: 'declared-not-registered' | 'registered-not-declared' | 'uri-differs';
  /** Tool, resource or prompt. */
  readonly kind: CapabilityKind;
  /** Its name. */
  readonly name: string;
  /** One line for people. */
  readonly message: string;
}

const KINDS: ReadonlyArray<{ readonly kind: CapabilityKind; readonly key: 'tools' | 'resources' | 'prompts' }> = [
  { kind: 'tool', key: 'tools' },
  { kind: 'resource', key: 'resources' },
  { kind: 'prompt', key: 'prompts' },
];

/** The `uri` or `uriTemplate` each declared resource names, from the manifest as written. */
function declaredResourceUris(manifest: NormalizedManifest): Map<string, string> {
  const out = new Map<string, string>();
  const capabilities = manifest.raw['capabilities'];
  const resources = typeof capabilities === 'object' && capabilities !== null ? (capabilities as Record<string, unknown>)['resources'] : undefined;
  if (!Array.isArray(resources)) return out;
  for (const item of resources as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { name, uri, uriTemplate } = item as Record<string, unknown>;
    const declared = typeof uri === 'string' ? uri : uriTemplate;
    if (typeof name === 'string' && typeof declared === 'string') out.set(name, declared);
  }
  return out;
}

function registeredUri(registration: CapturedRegistration): string | undefined {
  if (registration.kind !== 'resource') return undefined;
  return typeof registration.target === 'string' ? registration.target : registration.target.uriTemplate.toString();
}

/**
 * Compares the manifest's `capabilities` with the registrations captured
 * during `createPlugin`, both ways, plus the URI of each declared resource.
 * Mismatches are warnings unless strict capabilities turns them into a failure.
 */
export function reconcileCapabilities(manifest: NormalizedManifest, registrations: readonly CapturedRegistration[]): CapabilityMismatch[] {
  const declared = manifest.registrations ?? { tools: [], resources: [], prompts: [] };
  const uris = declaredResourceUris(manifest);
  const out: CapabilityMismatch[] = [];
  for (const { kind, key } of KINDS) {
    const registered = registrations.filter((r) => r.kind === kind);
    const registeredNames = new Set(registered.map((r) => r.name));
    const declaredNames = new Set(declared[key]);
    for (const name of declaredNames) {
      if (!registeredNames.has(name)) {
        out.push({ problem: 'declared-not-registered', kind, name, message: `${kind} "${name}" is declared in capabilities.${key} but createPlugin did not register it` });
      }
    }
    for (const registration of registered) {
      const { name } = registration;
      if (!declaredNames.has(name)) {
        out.push({ problem: 'registered-not-declared', kind, name, message: `${kind} "${name}" was registered but is not declared in capabilities.${key}` });
        continue;
      }
      const expected = uris.get(name);
      const actual = registeredUri(registration);
      if (expected !== undefined && actual !== undefined && expected !== actual) {
        out.push({ problem: 'uri-differs', kind, name, message: `resource "${name}" is declared at ${expected} but registered at ${actual}` });
      }
    }
  }
  return out;
}
