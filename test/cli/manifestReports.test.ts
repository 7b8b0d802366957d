import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, REPO, tempDir } from './cliHarness.js';

let work: { readonly path: string; dispose(): Promise<void> };
beforeAll(async () => {
  work = await tempDir('mcp-manifest-reports-');
});
afterAll(() => work.dispose());

async function manifestFile(name: string, text: string): Promise<string> {
  const path = join(work.path, name);
  await writeFile(path, text);
  return path;
}

async function withSchema(fixture: string, name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(REPO, fixture), 'utf8')) as Record<string, unknown>;
  return manifestFile(name, JSON.stringify({ $schema: 'https://mcp-plugin-host.dev/schemas/any.schema.json', ...manifest }, null, 2));
}

describe('validate reports on manifests a person can act on', () => {
  it.each([
    ['GUM JSON', 'fixtures/plugins/hello/manifest.json', 'manifest.json'],
    ['Open Discovery JSON', 'fixtures/manifests/open-discovery/valid/minimal.json', 'mcp-plugin.json'],
  ])('"$schema" is accepted in %s', async (_form, fixture, name) => {
    const run = await cli(['validate', await withSchema(fixture, name), '--json']);
    expect(json(run)).toMatchObject({ ok: true, violations: [] });
    expect(run.code).toBe(0);
  });

  it('a JSON syntax error names its line and column', async () => {
    const path = await manifestFile('broken.json', '{\n  "plugin_id": "x",\n  "name": "x"\n  "version": "1"\n}\n');
    const run = await cli(['validate', path, '--json']);
    expect(run.code).toBe(3);
    expect(json(run).violations).toEqual([
      {
        pointer: '',
        code: 'PLUGIN_MANIFEST_INVALID',
        stage: 'parse',
        message: "manifest is not valid JSON (line 4, column 3): Expected ',' or '}' after property value",
        hint: expect.stringMatching(/\S/),
        line: 4,
        column: 3,
      },
    ]);
  });

  it('a JSON syntax error V8 gives no position for still gets one, without a quote of the text', async () => {
    const path = await manifestFile('trailing.json', '{\n  "a": [1, 2,\n  ]\n}');
    const run = await cli(['validate', path, '--json']);
    expect((json(run).violations as Array<{ message: string }>)[0]?.message).toBe("manifest is not valid JSON (line 3, column 3): Unexpected token ']'");
  });

  it('a misspelt key gets a did-you-mean', async () => {
    const manifest = JSON.parse(await readFile(join(REPO, 'fixtures/plugins/hello/manifest.json'), 'utf8')) as Record<string, unknown>;
    const { executable, ...rest } = manifest;
    const run = await cli(['validate', await manifestFile('typo.json', JSON.stringify({ ...rest, exectuable: executable })), '--json']);
    expect(run.code).toBe(3);
    expect(json(run).violations).toContainEqual(
      expect.objectContaining({ pointer: '/exectuable', message: 'unknown property "exectuable" (did you mean "executable"?)' }),
    );
  });
});
