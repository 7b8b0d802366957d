/**
 * What a server that dies before answering said, in the failed install's
 * message. Found with @azure-devops/mcp 2.10.0: its keytar addon is built by
 * an install script that never runs here, Node prints "Error: Cannot find
 * module '../build/Release/keytar.node'" above a dozen stack frames, and the
 * message said only "see details.stderr_tail" while the CLI showed the
 * tail's last lines: the frames, not the error. The message now quotes the
 * first line of the tail that reads as an error, redacted like the tail.
 * The packages are packed locally with `npm pack`.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

async function installFails(name: string, source: string, options: { env?: Record<string, string>; grantEnv?: readonly string[] } = {}) {
  const tarball = await packServer(await pool.profile(), { name, source });
  const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: { ...process.env, ...options.env } });
  const error = (
    await host.install(`npm:${tarball}`, { canary: false, ...(options.grantEnv === undefined ? {} : { grant: { network: false, fs_write_dir: '', env_allow: options.grantEnv } }) })
  )._unsafeUnwrapErr();
  expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
  return error;
}

describe('npm: the error a server printed before it closed its stdout', { timeout: 120_000 }, () => {
  it('quotes a Node error that a stack trace buries (a missing module imported at start)', async () => {
    // As keytar's lib/keytar.js requires its addon: Node prints the source line, a caret, the error, then the frames.
    const error = await installFails('buried-error', "#!/usr/bin/env node\nimport './build/Release/addon.mjs';\n");
    expect(error.message).toMatch(
      /^introspecting the server failed: the server closed its stdout before answering \(exited with status 1\); its stderr says: Error \[ERR_MODULE_NOT_FOUND\]: Cannot find module '[^']*\/build\/Release\/addon\.mjs' imported from .* \(details\.stderr_tail has the rest\)$/,
    );
    // The tail holds more than the quoted line: the frames below it.
    expect(String(error.details['stderr_tail']).split('\n').length).toBeGreaterThan(3);
  });

  it("quotes a server's own error line, cut at 300 characters, and never a granted token in it", async () => {
    const source = `#!/usr/bin/env node
process.stderr.write('starting\\n  at config.js:1\\nConfigError: token ' + process.env.TOKEN + ' was refused; ' + 'x'.repeat(400) + '\\nbye\\n');
process.exit(1);
`;
    const token = 'tok-0123456789-secret';
    const error = await installFails('own-error', source, { env: { TOKEN: token }, grantEnv: ['TOKEN'] });
    expect(error.message).toContain('; its stderr says: ConfigError: token [redacted] was refused; xxx');
    expect(error.message).toMatch(/x…\s\(details\.stderr_tail has the rest\)$/);
    expect(error.message).not.toContain(token);
    expect(JSON.stringify(error.details)).not.toContain(token);
  });

  it('quotes a tail of one line that names no error: it is all the server said before it exited', async () => {
    const error = await installFails('plain-words', "#!/usr/bin/env node\nprocess.stderr.write('please place keys.json in the current directory\\n');\nprocess.exit(1);\n");
    expect(error.message).toBe(
      'introspecting the server failed: the server closed its stdout before answering (exited with status 1); its stderr says: please place keys.json in the current directory (details.stderr_tail has the rest)',
    );
  });

  it('says only where to look when no line of a longer tail reads as an error', async () => {
    const error = await installFails('plain-lines', "#!/usr/bin/env node\nprocess.stderr.write('starting\\nplease place keys.json in the current directory\\n');\nprocess.exit(1);\n");
    expect(error.message).toBe('introspecting the server failed: the server closed its stdout before answering (exited with status 1); see details.stderr_tail');
  });
});
