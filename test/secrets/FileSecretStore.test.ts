import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSecretStore } from '../../src/secrets/SecretStore.js';

describe('FileSecretStore', () => {
  let dir = '';
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('stores values in a 0600 file inside a 0700 directory, merges, and deletes', async () => {
    dir = await mkdtemp(join(tmpdir(), 'secrets-'));
    const store = new FileSecretStore(dir);
    expect((await store.get('p'))._unsafeUnwrap()).toEqual({});
    (await store.set('p', { A: '1' }))._unsafeUnwrap();
    (await store.set('p', { B: '2' }))._unsafeUnwrap();
    expect((await store.get('p'))._unsafeUnwrap()).toEqual({ A: '1', B: '2' });
    expect((await stat(join(dir, 'secrets', 'p.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'secrets'))).mode & 0o777).toBe(0o700);
    (await store.delete('p'))._unsafeUnwrap();
    expect((await store.get('p'))._unsafeUnwrap()).toEqual({});
  });
});
