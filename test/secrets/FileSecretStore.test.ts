import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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

  it('keeps every value of writes made at once, each reporting success, and leaves no temporary file', async () => {
    dir = await mkdtemp(join(tmpdir(), 'secrets-'));
    const store = new FileSecretStore(dir);
    // A long value keeps the first write busy while the others start: they shared one temporary file.
    const outcomes = await Promise.all([store.set('p', { A: 'a'.repeat(200_000) }), store.set('p', { B: 'sk-live-2' }), store.set('p', { C: 'sk-live-3' })]);
    for (const outcome of outcomes) expect(outcome.isOk()).toBe(true);
    expect(Object.keys((await store.get('p'))._unsafeUnwrap()).sort()).toEqual(['A', 'B', 'C']);
    expect(await readdir(join(dir, 'secrets'))).toEqual(['p.json']);
  });

  it('leaves no copy of the values a killed writer left once the plugin is deleted', async () => {
    dir = await mkdtemp(join(tmpdir(), 'secrets-'));
    const store = new FileSecretStore(dir);
    // What a writer killed between its write and its rename left (this and the previous naming), and another plugin's file.
    (await store.set('p', { TOKEN: 'sk-live-stored' }))._unsafeUnwrap();
    (await store.set('p.json', { TOKEN: 'sk-live-other' }))._unsafeUnwrap();
    for (const left of ['p.json.4242.tmp', 'p.json.4243.0a1b2c3d4e5f.tmp']) await writeFile(join(dir, 'secrets', left), '{"TOKEN":"sk-live-left"}', { mode: 0o600 });
    (await store.delete('p'))._unsafeUnwrap();
    const kept = await readdir(join(dir, 'secrets'));
    expect(kept).toEqual(['p.json.json']);
    expect(await readFile(join(dir, 'secrets', 'p.json.json'), 'utf8')).toContain('sk-live-other');
  });
});
