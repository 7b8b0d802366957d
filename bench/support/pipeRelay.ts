/**
 * A second stdio hop and nothing else: spawns `node <entry>` and copies
 * bytes from this process's stdin to the child's stdin and from the child's
 * stdout to this process's stdout, parsing nothing. Between an MCP client
 * and a plugin, it costs what any process in the middle costs at least (two
 * more pipe writes, two more process wake-ups per call).
 *
 *   node --import tsx bench/support/pipeRelay.ts <entry>
 */
import { spawn } from 'node:child_process';

const entry = process.argv[2];
if (entry === undefined) throw new Error('usage: pipeRelay.ts <entry>');
const child = spawn(process.execPath, [entry], { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.on('exit', (code) => process.exit(code ?? 0));
