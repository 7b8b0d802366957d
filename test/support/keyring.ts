/**
 * A real Secret Service for tests: a private D-Bus session bus (no service
 * activation, so nothing starts behind the test's back) and a GNOME Keyring
 * daemon on it, unlocked with a throwaway password, keeping its keyrings in
 * a temp directory. Both are children of the test process, stopped by pid.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running session bus with an unlocked keyring. */
export interface KeyringSession {
  /** The environment `secret-tool` needs to reach the keyring. */
  readonly env: Record<string, string>;
  /** Stops the daemons and deletes their files. */
  stop(): Promise<void>;
}

/** The first match of `pattern` in what `child` prints on stdout (dbus-daemon prints its address without a newline at first). */
function printed(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const match = pattern.exec(text);
      if (match !== null) resolve(match[0]);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`exited with ${String(code)} before printing`)));
  });
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const BUS_CONFIG = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:tmpdir=/tmp</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
`;

/** Whether a process owns the Secret Service name on the bus `env` names. */
function secretServiceUp(env: Record<string, string>): Promise<boolean> {
  const args = ['--session', '--print-reply', '--dest=org.freedesktop.DBus', '/', 'org.freedesktop.DBus.NameHasOwner', 'string:org.freedesktop.secrets'];
  return new Promise((resolve) => execFile('dbus-send', args, { env }, (error, stdout) => resolve(error === null && /boolean true/.test(stdout))));
}

/** Starts a bus and an unlocked GNOME Keyring on it; resolves once the keyring owns the Secret Service name. */
export async function startKeyring(): Promise<KeyringSession> {
  const home = await mkdtemp(join(tmpdir(), 'keyring-'));
  await writeFile(join(home, 'bus.conf'), BUS_CONFIG);
  const base = { PATH: '/usr/bin:/bin', HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_RUNTIME_DIR: home };
  const bus = spawn('dbus-daemon', [`--config-file=${join(home, 'bus.conf')}`, '--nofork', '--print-address=1'], { env: base, stdio: ['ignore', 'pipe', 'ignore'] });
  const address = await printed(bus, /unix:\S*guid=[0-9a-f]{32}/);
  const env = { ...base, DBUS_SESSION_BUS_ADDRESS: address };
  const keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], { env, stdio: ['pipe', 'ignore', 'ignore'] });
  keyring.stdin?.end('test-keyring-password');
  const stop = async (): Promise<void> => {
    await stopped(keyring);
    await stopped(bus);
    await rm(home, { recursive: true, force: true });
  };
  for (let attempt = 0; !(await secretServiceUp(env)); attempt++) {
    if (attempt === 200 || keyring.exitCode !== null) {
      await stop();
      throw new Error('gnome-keyring-daemon did not take the Secret Service name');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { env, stop };
}
