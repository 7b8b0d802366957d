import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { PackageDigest } from './checksum.js';
import { Refusal } from './refusal.js';

/** An Ed25519 public key the host trusts to sign packages. */
export interface TrustedKey {
  /** The key, ready for `crypto.verify`. */
  readonly key: KeyObject;
  /** `sha256:<hex>` of the raw 32-byte public key: how reports name the key. */
  readonly fingerprint: string;
}

const BASE64 = /^(?:[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+)$/;
const SIDECAR_MAX_BYTES = 4096;
const ED25519_SIGNATURE_BYTES = 64;
const ED25519_KEY_BYTES = 32;

const invalidOption = (index: number, message: string): HostError =>
  hostError('HOST_INVALID_OPTIONS', `trustedKeys[${index}]: ${message}`, { details: { option: `trustedKeys[${index}]` } });

const signatureInvalid = (reason: string, message: string): HostError =>
  hostError('PLUGIN_SIGNATURE_INVALID', message, { details: { reason } });

function fingerprintOf(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  return `sha256:${createHash('sha256').update(Buffer.from(jwk.x ?? '', 'base64url')).digest('hex')}`;
}

function parseKey(text: string, index: number): Result<TrustedKey, HostError> {
  const trimmed = text.trim();
  let key: KeyObject;
  if (trimmed.startsWith('-----BEGIN')) {
    if (trimmed.includes('PRIVATE KEY')) return err(invalidOption(index, 'is a private key; give the public key'));
    try {
      key = createPublicKey({ key: trimmed, format: 'pem' });
    } catch (cause) {
      return err(invalidOption(index, `is not a readable PEM public key (${String(cause)})`));
    }
  } else {
    const raw = decodeBase64(trimmed);
    if (raw?.length !== ED25519_KEY_BYTES) {
      return err(invalidOption(index, 'is neither a PEM public key nor a base64 raw 32-byte Ed25519 key'));
    }
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    return err(invalidOption(index, `is a ${key.asymmetricKeyType ?? 'unknown'} key; only Ed25519 keys sign packages`));
  }
  return ok({ key, fingerprint: fingerprintOf(key) });
}

/**
 * Reads the host's trusted keys: each a PEM `PUBLIC KEY` (SPKI) or the raw
 * 32-byte Ed25519 public key in base64 or base64url.
 */
export function parseTrustedKeys(keys: readonly string[]): Result<readonly TrustedKey[], HostError> {
  const out: TrustedKey[] = [];
  for (const [index, text] of keys.entries()) {
    const parsed = parseKey(text, index);
    if (parsed.isErr()) return err(parsed.error);
    out.push(parsed.value);
  }
  return ok(out);
}

/** Decodes a signature given as base64 text (surrounding whitespace ignored) or as raw bytes. */
export function decodeSignature(signature: string | Uint8Array): Result<Buffer, HostError> {
  const bytes = typeof signature === 'string' ? decodeBase64(signature.trim()) : Buffer.from(signature);
  if (bytes?.length !== ED25519_SIGNATURE_BYTES) {
    return err(signatureInvalid('malformed', `signature is not ${ED25519_SIGNATURE_BYTES} bytes of base64-encoded Ed25519`));
  }
  return ok(bytes);
}

function decodeBase64(text: string): Buffer | undefined {
  if (!BASE64.test(text)) return undefined;
  return Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
}

/**
 * The exact bytes a package signature covers: the UTF-8 text of the digest,
 * `sha256:<64 lowercase hex>`, with no newline.
 */
export function signedMessage(digest: PackageDigest): Buffer {
  return Buffer.from(digest, 'utf8');
}

/** Checks the signature against every trusted key; the first that verifies names the signer. */
export function verifyDigestSignature(
  digest: PackageDigest,
  signature: Buffer,
  keys: readonly TrustedKey[],
): Result<TrustedKey, HostError> {
  const message = signedMessage(digest);
  for (const trusted of keys) {
    if (verify(null, message, trusted.key, signature)) return ok(trusted);
  }
  return err(
    signatureInvalid('not_verified', `the package signature does not verify against any of the ${keys.length} trusted keys`),
  );
}

/**
 * Reads the `<archive>.sig` sidecar; `undefined` when there is none. Opened
 * without blocking and refused (`PLUGIN_SIGNATURE_INVALID`, `malformed`)
 * unless it is a regular file: a FIFO put there would hold the install (and
 * a thread of the pool) until something wrote to it.
 */
export async function readSidecarSignature(archivePath: string): Promise<string | undefined> {
  const path = `${archivePath}.sig`;
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw cause;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Refusal(signatureInvalid('malformed', `the signature sidecar ${path} is not a regular file`));
    const buffer = Buffer.alloc(SIDECAR_MAX_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    // An oversized sidecar decodes to the wrong length and is refused as malformed.
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
