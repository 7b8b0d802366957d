import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
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

  it('says a file that is not JSON is unreadable without quoting it (the parser quotes the text it failed on)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'secrets-'));
    await mkdir(join(dir, 'secrets'), { mode: 0o700 });
    const store = new FileSecretStore(dir);
    for (const text of ['sk-live-abcdef123456', '{"TOKEN":sk-live-abcdef123456}', '{"TOKEN":"sk-live-abcdef123456"']) {
      await writeFile(join(dir, 'secrets', 'p.json'), text, { mode: 0o600 });
      const failure = (await store.get('p'))._unsafeUnwrapErr();
      expect(failure.code).toBe('HOST_IO_ERROR');
      const told = [failure.message, failure.hint, JSON.stringify(failure.details), String((failure.cause as Error | undefined)?.message)].join('\n');
      expect(told).not.toContain('sk-live');
      expect(failure.message).toContain('is not a JSON object');
      expect((await store.set('p', { B: '2' })).isErr()).toBe(true);
    }
  });
});
