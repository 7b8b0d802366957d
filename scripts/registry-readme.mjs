#!/usr/bin/env node
/**
 * The README the npm registry shows: npm renders the packed README.md on the
 * package's page, where a relative link has no repository to resolve against
 * (the package declares none). `prepack` rewrites every relative link to the
 * same file inside this version's published tarball on unpkg, refusing a link
 * to a file the package does not ship; `postpack` puts the repository's README
 * back. The repository keeps relative links, which work where it is read.
 *
 * Usage: node scripts/registry-readme.mjs prepack|postpack
 */
import { copyFileSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, normalize } from 'node:path';

const root = process.cwd();
const readmePath = join(root, 'README.md');
const keptPath = join(root, '.README.repository.md');
const LINK = /\]\(([^)\s]+)\)/g;

function shippedRoots(manifest) {
  return (manifest.files ?? []).map((entry) => normalize(entry).replace(/\/$/, ''));
}

function isShipped(target, roots) {
  const path = normalize(target);
  if (path.startsWith('..')) return false;
  return roots.some((entry) => path === entry || path.startsWith(`${entry}/`)) && existsSync(join(root, path));
}

function registryLinks(text, manifest) {
  const base = `https://unpkg.com/${manifest.name}@${manifest.version}/`;
  const roots = shippedRoots(manifest);
  const unshipped = [];
  const rewritten = text.replace(LINK, (whole, target) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) return whole;
    const [file, anchor] = target.split('#', 2);
    if (!isShipped(file, roots)) {
      unshipped.push(target);
      return whole;
    }
    const path = statSync(join(root, file)).isDirectory() ? `${normalize(file)}/` : normalize(file);
    return `](${base}${path}${anchor === undefined ? '' : `#${anchor}`})`;
  });
  return { rewritten, unshipped };
}

const step = process.argv[2];
if (step === 'prepack') {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (existsSync(keptPath)) {
    // A pack that stopped before postpack left the registry README in place; the kept copy is the repository's.
    copyFileSync(keptPath, readmePath);
  }
  const { rewritten, unshipped } = registryLinks(readFileSync(readmePath, 'utf8'), manifest);
  if (unshipped.length > 0) {
    process.stderr.write(`README.md links to files the package does not ship (add them to "files" or link absolutely): ${unshipped.join(', ')}\n`);
    process.exit(1);
  }
  copyFileSync(readmePath, keptPath);
  writeFileSync(readmePath, rewritten);
} else if (step === 'postpack') {
  if (existsSync(keptPath)) renameSync(keptPath, readmePath);
} else {
  process.stderr.write('usage: registry-readme.mjs prepack|postpack\n');
  process.exit(2);
}
