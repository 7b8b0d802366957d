import { writeFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseChecksum } from '../../src/installer/checksum.js';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { digestOf, ed25519Keys, signPackage, tgzOf, zipOf } from './craftArchives.js';
import { expectRefused, expectStaged, workspace, type Workspace } from './workspace.js';

const PACKAGE = tgzOf([{ path: 'manifest.json', data: '{"manifest_schema_version":1}' }]);

let ws: Workspace;
let archive: string;
beforeEach(async () => {
  ws = await workspace();
  archive = await ws.file('plugin.tgz', PACKAGE);
});
afterEach(async () => {
  await ws.dispose();
});

describe('checksum', () => {
  it('accepts sha256:<hex>, bare hex and upper case, and reports the canonical digest', async () => {
    const digest = digestOf(PACKAGE);
    for (const checksum of [digest, digest.slice('sha256:'.length), digest.toUpperCase().replace('SHA256:', 'sha256:')]) {
      const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, checksum, requireChecksum: true }));
      expect(staged.digest).toBe(digest);
      await staged.discard();
    }
  });

  it('refuses a mismatch, naming both digests', async () => {
    const wrong = `sha256:${'0'.repeat(64)}`;
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, checksum: wrong }), ws.stagingRoot, 'PLUGIN_CHECKSUM_MISMATCH', {
      reason: 'mismatch',
      expected: wrong,
      actual: digestOf(PACKAGE),
    });
  });

  it('refuses a one-byte change of the archive', async () => {
    const checksum = digestOf(PACKAGE);
    const tampered = Buffer.from(PACKAGE);
    tampered[tampered.length - 5] = (tampered[tampered.length - 5] ?? 0) ^ 1;
    await writeFile(archive, tampered);
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, checksum }), ws.stagingRoot, 'PLUGIN_CHECKSUM_MISMATCH');
  });

  it('refuses a missing checksum when one is required', async () => {
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, requireChecksum: true }), ws.stagingRoot, 'PLUGIN_CHECKSUM_MISMATCH', {
      reason: 'missing',
    });
  });

  it('refuses checksums it cannot check', () => {
    for (const text of ['md5:d41d8cd98f00b204e9800998ecf8427e', 'sha256:abc', `sha512:${'a'.repeat(64)}`, '']) {
      const parsed = parseChecksum(text);
      expect(parsed.isErr() && parsed.error.code).toBe('PLUGIN_CHECKSUM_MISMATCH');
      expect(parsed.isErr() && parsed.error.details).toMatchObject({ reason: 'malformed' });
    }
  });
});

describe('signature', () => {
  it('verifies a sidecar <archive>.sig made with a trusted key (PEM) and reports its fingerprint', async () => {
    const keys = ed25519Keys();
    await writeFile(`${archive}.sig`, `${signPackage(PACKAGE, keys.privateKey)}\n`);
    const staged = expectStaged(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.pem], requireSignatures: true }),
    );
    expect(staged.signature?.keyFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    await staged.discard();
  });

  it('verifies a caller-given signature against raw base64 keys, picking the key that signed', async () => {
    const other = ed25519Keys();
    const signer = ed25519Keys();
    const viaPem = expectStaged(
      await openPackageSource(archive, {
        stagingRoot: ws.stagingRoot,
        trustedKeys: [signer.pem],
        signature: signPackage(PACKAGE, signer.privateKey),
      }),
    );
    const staged = expectStaged(
      await openPackageSource(archive, {
        stagingRoot: ws.stagingRoot,
        trustedKeys: [other.raw, signer.raw],
        signature: Buffer.from(signPackage(PACKAGE, signer.privateKey), 'base64'),
        requireSignatures: true,
      }),
    );
    expect(staged.signature?.keyFingerprint).toBe(viaPem.signature?.keyFingerprint);
    await Promise.all([staged.discard(), viaPem.discard()]);
  });

  it('signs zip archives the same way', async () => {
    const keys = ed25519Keys();
    const zip = await zipOf([{ name: 'mcp-plugin.json', data: '{}' }]);
    const path = await ws.file('plugin.zip', zip);
    await writeFile(`${path}.sig`, signPackage(zip, keys.privateKey));
    const staged = expectStaged(await openPackageSource(path, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.raw], requireSignatures: true }));
    expect(staged.signature).toBeDefined();
    await staged.discard();
  });

  it('refuses a signature by an untrusted key', async () => {
    const trusted = ed25519Keys();
    const stranger = ed25519Keys();
    await writeFile(`${archive}.sig`, signPackage(PACKAGE, stranger.privateKey));
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [trusted.pem] }),
      ws.stagingRoot,
      'PLUGIN_SIGNATURE_INVALID',
      { reason: 'not_verified' },
    );
  });

  it('refuses a signature over other bytes, and one that is not a signature', async () => {
    const keys = ed25519Keys();
    const otherPackage = tgzOf([{ path: 'manifest.json', data: '{}' }]);
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.pem], signature: signPackage(otherPackage, keys.privateKey) }),
      ws.stagingRoot,
      'PLUGIN_SIGNATURE_INVALID',
      { reason: 'not_verified' },
    );
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.pem], signature: 'not base64!' }),
      ws.stagingRoot,
      'PLUGIN_SIGNATURE_INVALID',
      { reason: 'malformed' },
    );
  });

  it('refuses a missing signature when signatures are required', async () => {
    const keys = ed25519Keys();
    await expectRefused(
      await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.pem], requireSignatures: true }),
      ws.stagingRoot,
      'PLUGIN_SIGNATURE_INVALID',
      { reason: 'missing' },
    );
  });

  it('ignores a signature when no key is trusted and none is required', async () => {
    await writeFile(`${archive}.sig`, 'garbage');
    const staged = expectStaged(await openPackageSource(archive, { stagingRoot: ws.stagingRoot }));
    expect(staged.signature).toBeUndefined();
    await staged.discard();
  });

  it('refuses unusable key options up front', async () => {
    const rsa = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 1024 });
    const cases = [
      { trustedKeys: ['AAAA'] },
      { trustedKeys: [rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString()] },
      { trustedKeys: [ed25519Keys().privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()] },
      { requireSignatures: true },
      { limits: { maxEntries: 0 } },
    ];
    for (const extra of cases) {
      await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, ...extra }), ws.stagingRoot, 'HOST_INVALID_OPTIONS');
    }
  });
});
