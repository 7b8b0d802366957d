/**
 * Copies the MCP Bundle manifest JSON Schemas published in the
 * `@anthropic-ai/mcpb` package (MIT, Copyright 2025 Anthropic, PBC) into
 * etc/mcpb/, with the package's LICENSE, so that the library validates bundle
 * manifests against the official schemas without depending on the MCPB CLI at
 * run time. `npx tsx scripts/sync-mcpb-schemas.ts` after upgrading the
 * devDependency; test/bundle/officialSchemas.test.ts fails while the copies
 * differ from the installed package.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'etc/mcpb');
const index = JSON.parse(readFileSync(join(target, 'schemas.json'), 'utf8')) as { versions: Record<string, string> };
// The package exports its schemas (dist/) but not its package.json; its root is one level up.
const packageDir = dirname(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/mcpb/mcpb-manifest-v0.1.schema.json')));
const version = (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;

for (const file of new Set(Object.values(index.versions))) copyFileSync(join(packageDir, 'schemas', file), join(target, file));
copyFileSync(join(packageDir, 'LICENSE'), join(target, 'LICENSE'));
writeFileSync(join(target, 'schemas.json'), `${JSON.stringify({ ...index, package: `@anthropic-ai/mcpb@${version}` }, null, 2)}\n`);
console.log(`etc/mcpb: schemas of @anthropic-ai/mcpb@${version}`);
