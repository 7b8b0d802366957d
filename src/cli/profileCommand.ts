import { readFile } from 'node:fs/promises';
import { hostError } from '../errors/HostError.js';
import { readProfileFile, runProfileTests, shapeSample, type ProfileFile } from '../host/profileFiles.js';
import { fail, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { usageFailure } from './usage.js';

/** `profile validate <file>` and `profile test <file>`: output profile files checked and run without a host. */
export async function profileCommand(ctx: CommandContext): Promise<ExitCode> {
  const [action = '', path = ''] = ctx.positionals;
  if (action !== 'validate' && action !== 'test') return usageFailure(ctx, `profile takes validate or test, not '${action}'`, 'profile');
  if (action === 'validate' && (ctx.flags.input !== undefined || ctx.flags.safeFields.length > 0)) {
    return usageFailure(ctx, '--input and --safe-field belong to profile test', 'profile');
  }
  const read = await readProfileFile(path);
  if (read.isErr()) return fail(ctx, read.error, false);
  const file = read.value;
  if (file.problems.length > 0 || action === 'validate') return reportValidation(ctx, file);
  return ctx.flags.input === undefined ? runTests(ctx, file) : shapeInput(ctx, file, ctx.flags.input);
}

function reportValidation(ctx: CommandContext, file: ProfileFile): ExitCode {
  const { out } = ctx;
  const profiles = Object.keys(file.definitions);
  const valid = file.problems.length === 0;
  out.data({ ok: valid, file: file.path, valid, profiles, tests: file.tests.length, problems: file.problems });
  if (valid) {
    out.line(`${out.style.green('ok')} ${file.path}: ${profiles.length} profile(s) (${profiles.join(', ')}), ${file.tests.length} test(s)`);
    return EXIT_CODES.ok;
  }
  out.line(`${out.style.red('invalid')} ${file.path}: ${file.problems.length} problem(s)`);
  for (const line of out.violationLines(file.problems.map((p) => ({ ...p, stage: 'output_profiles' })))) out.line(line);
  return EXIT_CODES.validation;
}

async function runTests(ctx: CommandContext, file: ProfileFile): Promise<ExitCode> {
  const { out } = ctx;
  const only = ctx.flags.outputProfile;
  const results = (await runProfileTests(file, only))._unsafeUnwrap();
  const passed = results.every((r) => r.passed);
  out.data({ ok: passed, file: file.path, passed, results });
  if (results.length === 0) {
    out.line(`${file.path}: no tests${only === undefined ? '' : ` of profile ${only}`}`);
    return EXIT_CODES.ok;
  }
  out.table(
    ['test', 'result', 'details'],
    results.map((r) => [r.name, r.passed ? 'passed' : 'failed', r.passed ? '' : r.failures.join('; ')]),
  );
  return passed ? EXIT_CODES.ok : EXIT_CODES.validation;
}

async function shapeInput(ctx: CommandContext, file: ProfileFile, input: string): Promise<ExitCode> {
  const { out } = ctx;
  const defined = Object.keys(file.definitions);
  const name = ctx.flags.outputProfile ?? (defined.length === 1 ? defined[0] : undefined);
  if (name === undefined) return usageFailure(ctx, `${file.path} defines ${defined.length} profiles: name one with --name`, 'profile');
  let sample: unknown;
  try {
    sample = JSON.parse(await readFile(input, 'utf8'));
  } catch (cause) {
    return fail(ctx, hostError('HOST_INVALID_OPTIONS', `--input ${input} cannot be read as JSON: ${(cause as Error).message}`, { cause }), false);
  }
  const shaped = shapeSample(file, name, sample, ctx.flags.safeFields);
  if (shaped.isErr()) return fail(ctx, shaped.error, false);
  const { body, outcome } = shaped.value;
  out.data({ ok: true, file: file.path, profile: name, outcome, result: body });
  out.line(JSON.stringify(body, null, 2));
  out.note(
    `${name}: ${outcome.lossy ? 'lossy' : 'lossless'}; ${outcome.removed_fields} field(s) removed, ${outcome.omitted_count} item(s) omitted, ${outcome.truncated_strings} string(s) truncated` +
      (outcome.result_count === undefined ? '' : `; ${outcome.result_count} record(s)`) +
      (outcome.on_empty_message === undefined ? '' : `; on_empty: ${outcome.on_empty_message}`),
  );
  return EXIT_CODES.ok;
}
