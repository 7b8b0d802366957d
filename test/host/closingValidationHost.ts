// A host process that closes its host while a large result's validation is still running on a worker, then does
// nothing more: it must exit by itself (no process.exit), with its exit code, as a CLI that closes its host does.
// Prints one JSON line: the call's error code, the answer:validation steps and the pool's state after the close.
// Usage: node --import tsx closingValidationHost.ts <profileDir> <opId> <argsJson>
import { PluginHost } from '../../src/host/PluginHost.js';
import { offThreadValidationState } from '../../src/manifest/answerValidation.js';

const [profileDir, opId, argsJson] = process.argv.slice(2) as [string, string, string];
const opened = await PluginHost.open({ profileDir, profileKind: 'dev', interpreterSearchPath: '/usr/bin:/bin' });
if (opened.isErr()) throw opened.error;
const host = opened.value;
const steps: string[] = [];
let closed: Promise<void> | undefined;
host.events.on('answer:validation', (event) => {
  steps.push(`${event.phase}${event.outcome === undefined ? '' : `:${event.outcome}`}`);
  // Closed once a worker runs it (the start event comes just before it is handed over).
  if (event.phase === 'start') closed = whenBusy().then(() => host.close());
});
async function whenBusy(): Promise<void> {
  while (offThreadValidationState().busy === 0) await new Promise((resolve) => setTimeout(resolve, 5));
}

const result = await host.call(opId, JSON.parse(argsJson));
await closed;
process.stdout.write(`${JSON.stringify({ code: result.isErr() ? result.error.code : 'ok', steps, state: offThreadValidationState() })}\n`);
process.exitCode = 7;
