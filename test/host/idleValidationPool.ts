// A process whose validation pool has a live idle worker and nothing else to do: it must exit by itself with its
// code, the worker still alive at its exit (an idle worker or its idle timer holding the process would make it wait
// for the worker's retirement, offThreadValidationIdleMs, and the exit would see no worker).
// Prints one JSON line at exit: the verdict and the pool's state then.
// Usage: node --import tsx idleValidationPool.ts
import { offThreadValidationState, validateOffThread } from '../../src/manifest/answerValidation.js';

const verdict = await validateOffThread({ dialect: 'response', schemaText: JSON.stringify({ type: 'array', items: { type: 'number' } }), value: [1, 2, 3], owner: 'idle' });
process.on('exit', () => process.stdout.write(`${JSON.stringify({ verdict: verdict.kind, state: offThreadValidationState() })}\n`));
process.exitCode = 7;
