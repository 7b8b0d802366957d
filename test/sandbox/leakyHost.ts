// A host process started by a parent that leaks a descriptor without close-on-exec (as a careless service manager or
// shell would): spawns `ls /proc/self/fd` in a sandbox and prints the plugin's descriptors and the host's own leaked
// ones as one JSON line.
// Usage: node --import tsx leakyHost.ts <landlock|bubblewrap> <installRoot> <writeDir>
import { inheritableDescriptors } from '../../src/process/processTree.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';

const [backend, installRoot, writeDir] = process.argv.slice(2) as ['landlock' | 'bubblewrap', string, string];
const spawned = await SandboxSpawner.create({ backend }).andThen((spawner) =>
  spawner.spawn({ executable: unverifiedCommand(['/bin/ls', '/proc/self/fd'], installRoot), env: {}, network: false, writeDir, hiddenPaths: [] }),
);
if (spawned.isErr()) {
  process.stdout.write(`${JSON.stringify({ error: spawned.error.message })}\n`);
  process.exit(1);
}
const chunks: Buffer[] = [];
spawned.value.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
await spawned.value.exited;
const plugin = Buffer.concat(chunks).toString('utf8').trim().split('\n').map(Number);
process.stdout.write(`${JSON.stringify({ plugin, hostLeaks: inheritableDescriptors() })}\n`);
