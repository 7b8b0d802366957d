/**
 * A native program named `node` that leaves a mark wherever it runs (a file
 * at a host path no sandbox shows writable), then behaves as the test asks:
 * runs the host's own Node with its arguments (so it answers `--version` as
 * that Node would and runs plugins), answers a version followed by 64 KiB
 * of blank lines (a long answer, whole only past the output bound), or never exits. It
 * stands for a Node interpreter the host does not own: a system, search-path
 * or version-manager Node that a package's `#!` line chose. The same program
 * under another name runs another interpreter (`python3` running the
 * system's Python): an MCP Bundle's `mcp_config.command` found first on the
 * search path.
 */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the program does after trying to leave its mark. */
export type MarkingBehaviour = 'runs_host_node' | 'pads_its_answer' | 'never_exits';

const SOURCE = `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  FILE *f = fopen(MARK, "w");
  if (f != NULL) { fputs("ran outside the sandbox\\n", f); fclose(f); }
#if BEHAVIOUR == 1
  fputs("v20.20.2", stdout);
  for (int i = 0; i < 65536; i++) fputc('\\n', stdout);
  return 0;
#elif BEHAVIOUR == 2
  for (;;) pause();
#else
  (void)argc;
  execv(TARGET, argv);
  return 127;
#endif
}
`;

const BEHAVIOURS: Readonly<Record<MarkingBehaviour, number>> = { runs_host_node: 0, pads_its_answer: 1, never_exits: 2 };

/** Compiles the program to `<dir>/node` (mode 0755); `mark` is the file it writes when it can. Returns its path. */
export async function markingNode(dir: string, mark: string, behaviour: MarkingBehaviour = 'runs_host_node'): Promise<string> {
  return markingProgram(dir, 'node', realpathSync(process.execPath), mark, behaviour);
}

/**
 * Compiles the program to `<dir>/<name>` (mode 0755), running `target` with
 * its arguments when it `runs_host_node`; `mark` is the file it writes when
 * it can. Returns its path.
 */
export async function markingProgram(dir: string, name: string, target: string, mark: string, behaviour: MarkingBehaviour = 'runs_host_node'): Promise<string> {
  await mkdir(dir, { recursive: true });
  const source = join(dir, `marking-${name}.c`);
  const program = join(dir, name);
  await writeFile(source, SOURCE);
  execFileSync('gcc', [
    '-O1',
    `-DMARK=${JSON.stringify(mark)}`,
    `-DTARGET=${JSON.stringify(target)}`,
    `-DBEHAVIOUR=${BEHAVIOURS[behaviour]}`,
    '-o',
    program,
    source,
  ]);
  await chmod(program, 0o755);
  return realpathSync(program);
}
