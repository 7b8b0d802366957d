/** The JSON Schemas are exported as `mcp-plugin-host/schemas/*`, so editors and CI can name them by package (issue 17). */
import { readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './cliHarness.js';

describe('mcp-plugin-host/schemas/*', () => {
  it('resolves every schema in etc/schemas through the package exports', async () => {
    // Resolved as the package itself (Node's self-reference), through package.json "exports".
    const require = createRequire(join(REPO, 'package.json'));
    const schemas = (await readdir(join(REPO, 'etc/schemas'))).filter((f) => f.endsWith('.schema.json'));
    expect(schemas).toContain('gum-manifest-v1.schema.json');
    for (const file of schemas) {
      expect(require.resolve(`mcp-plugin-host/schemas/${file}`)).toBe(join(REPO, 'etc/schemas', file));
      expect((require(`mcp-plugin-host/schemas/${file}`) as { $schema?: string }).$schema).toMatch(/json-schema\.org/);
    }
  });
});
