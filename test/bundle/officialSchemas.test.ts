/**
 * The MCP Bundle schemas in etc/mcpb/ are the official ones: byte for byte the
 * files of the installed @anthropic-ai/mcpb package (run
 * `npx tsx scripts/sync-mcpb-schemas.ts` after upgrading it), with its licence.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import index from '../../etc/mcpb/schemas.json' with { type: 'json' };
import { BUNDLE_MANIFEST_VERSIONS, BUNDLE_SCHEMA_SOURCE } from '../../src/bundle/bundleSchemas.js';

const PACKAGE = 'node_modules/@anthropic-ai/mcpb';

describe('official MCPB schemas', () => {
  it('are the installed package’s files, licence included, for every manifest_version read', async () => {
    const installed = (JSON.parse(await readFile(join(PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
    expect(BUNDLE_SCHEMA_SOURCE).toBe(`@anthropic-ai/mcpb@${installed}`);
    expect(BUNDLE_MANIFEST_VERSIONS).toEqual(Object.keys(index.versions));
    for (const file of [...Object.values(index.versions), 'LICENSE']) {
      const theirs = await readFile(join(PACKAGE, file === 'LICENSE' ? '' : 'schemas', file), 'utf8');
      expect(await readFile(join('etc/mcpb', file), 'utf8'), file).toBe(theirs);
    }
  });
});
