/**
 * The src/ folders form layers: no folder imports, even for a type, from a folder that imports it back, directly or
 * through others. A cycle between folders (binding → catalog → installer → manifest → shapes → binding once) means a
 * symbol sits in the wrong layer; the failure names the imports that close the cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
/** The files directly in src/ (the root entry) form one node of their own. */
const ROOT_NODE = '(src)';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

function folderOf(file: string): string | undefined {
  const path = relative(SRC, file);
  if (path === '..' || path.startsWith(`..${sep}`)) return undefined;
  const parts = path.split(sep);
  return parts.length > 1 ? parts[0] : ROOT_NODE;
}

/** For each folder, the folders it imports from, with the import lines that make each edge. */
function folderGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file) ?? ROOT_NODE;
    const edges = graph.get(from) ?? new Map<string, string[]>();
    graph.set(from, edges);
    // Type-only imports, re-exports and dynamic imports all count: each ties the folders together.
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const to = folderOf(resolve(dirname(file), specifier));
      if (to === undefined || to === from) continue;
      const why = edges.get(to) ?? [];
      why.push(`${relative(SRC, file)} imports ${specifier}`);
      edges.set(to, why);
    }
  }
  return graph;
}

/** Strongly connected groups of more than one folder (Tarjan), each with the import lines inside the group. */
function folderCycles(graph: Map<string, Map<string, string[]>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) groups.push(group);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return groups.map((group) =>
    group.flatMap((from) => [...(graph.get(from) ?? new Map<string, string[]>())].filter(([to]) => group.includes(to)).flatMap(([, why]) => why)).sort(),
  );
}

describe('src/ folder layering', () => {
  const graph = folderGraph();

  it('reads the imports it judges (the host facade depends on shapes and binding)', () => {
    expect([...(graph.get('host')?.keys() ?? [])]).toEqual(expect.arrayContaining(['shapes', 'binding', 'catalog']));
  });

  it('has no cycle between folders', () => {
    expect(folderCycles(graph)).toEqual([]);
  });
});
