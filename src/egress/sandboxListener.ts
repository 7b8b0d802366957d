import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Server } from 'node:net';
import type { Readable } from 'node:stream';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import type { LaunchedLauncher } from '../process/spawnChild.js';
import { SANDBOX_PROXY_PORT } from './sandboxProxy.js';

/** Why no proxy listener could be opened in a sandbox's network namespace. */
export interface SandboxListenerFailure {
  /**
   * `shared_namespace`: the sandbox has no network namespace of its own (a
   * listener there would be one on the host's network); `helper_unavailable`:
   * the helper that opens listeners could not be started or died;
   * `launcher_report`: the launcher did not say which process the sandbox is;
   * `listen_failed`: the namespace refused the listener.
   */
  readonly cause: 'shared_namespace' | 'helper_unavailable' | 'launcher_report' | 'listen_failed';
  readonly message: string;
}

/**
 * Opens, for the host, a listening socket on the proxy address inside the
 * network namespace of a process; started once per host process with the
 * system Python (`-I -S`: nothing but the standard library), as the host's
 * user, never in a sandbox. A socket belongs to the namespace it was made
 * in for its whole life, whoever holds it: the helper enters the namespace
 * (`setns`; when a user namespace other than the helper's owns it, as for a
 * host that is not root, in a child it forks, which enters that owner
 * first), makes the socket there, leaves, and sends the socket to the host
 * over the Node IPC channel (the `NODE_HANDLE` message Node reads a
 * `net.Server` from), keeping no copy.
 * So the host itself accepts every connection a plugin makes to its proxy
 * address, and no process the plugin could reach stands in between. It
 * binds with IP_FREEBIND because the sandbox may not have brought its
 * loopback up yet, refuses a namespace that is its own (the host's), and
 * dies with the host: on SIGKILL of its parent (PR_SET_PDEATHSIG) and
 * whenever the channel closes.
 */
const HELPER_SCRIPT = `
import array, ctypes, fcntl, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9, 0, 0, 0)
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)
port, backlog = int(sys.argv[2]), int(sys.argv[3])
CLONE_NEWNET, CLONE_NEWUSER, IP_FREEBIND, NS_GET_USERNS = 0x40000000, 0x10000000, 15, 0xb701
channel = socket.socket(fileno=int(os.environ['NODE_CHANNEL_FD']))
own_net = os.open('/proc/self/ns/net', os.O_RDONLY | os.O_CLOEXEC)
own_net_id = os.fstat(own_net).st_ino
own_user_id = os.stat('/proc/self/ns/user').st_ino

def enter(fd, kind, name):
    if libc.setns(fd, kind) != 0:
        code = ctypes.get_errno()
        raise OSError(code, 'entering the %s namespace: %s' % (name, os.strerror(code)))

def send(message, fd=None):
    data = (json.dumps(message) + '\\n').encode()
    rights = [] if fd is None else [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))]
    sent = channel.sendmsg([data], rights)
    if sent < len(data):
        channel.sendall(data[sent:])

def listen_and_send(rid):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
    listener.bind(('127.0.0.1', port))
    listener.listen(backlog)
    send({'cmd': 'NODE_HANDLE', 'type': 'net.Server', 'msg': {'listener': rid}}, listener.fileno())
    listener.close()

def parent_of(pid):
    with open('/proc/%d/stat' % pid) as stat:
        return int(stat.read().rsplit(')', 1)[1].split()[1])

def serve(rid, pid, launcher):
    net = os.open('/proc/%d/ns/net' % pid, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if parent_of(pid) != launcher:
            return send({'id': rid, 'cause': 'listen_failed', 'message': 'process %d is no longer the sandbox of launcher %d' % (pid, launcher)})
        if os.fstat(net).st_ino == own_net_id:
            return send({'id': rid, 'cause': 'shared_namespace', 'message': 'the sandbox has no network namespace of its own'})
        user = fcntl.ioctl(net, NS_GET_USERNS)
        try:
            if os.fstat(user).st_ino == own_user_id:
                enter(net, CLONE_NEWNET, 'network')
                try:
                    return listen_and_send(rid)
                finally:
                    enter(own_net, CLONE_NEWNET, "host's network")
            child = os.fork()
            if child == 0:
                try:
                    enter(user, CLONE_NEWUSER, 'user')
                    enter(net, CLONE_NEWNET, 'network')
                    listen_and_send(rid)
                    os._exit(0)
                except BaseException as e:
                    send({'id': rid, 'cause': 'listen_failed', 'message': str(e)})
                    os._exit(1)
            os.waitpid(child, 0)
        finally:
            os.close(user)
    finally:
        os.close(net)

pending = b''
while True:
    chunk = channel.recv(65536)
    if not chunk:
        sys.exit(0)
    pending += chunk
    *lines, pending = pending.split(b'\\n')
    for line in lines:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or not all(isinstance(request.get(key), int) for key in ('id', 'pid', 'launcher')):
            continue
        try:
            serve(request['id'], request['pid'], request['launcher'])
        except OSError as e:
            send({'id': request['id'], 'cause': 'listen_failed', 'message': str(e)})
`;

const STDERR_TAIL_CHARS = 2_000;

type Waiter = (outcome: Server | SandboxListenerFailure) => void;

/** One running helper: its requests by id, answered in any order. */
class ListenerHelper {
  private readonly waiting = new Map<number, Waiter>();
  private nextId = 1;
  private stderr = '';
  private gone: SandboxListenerFailure | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS)));
    child.on('message', (message: unknown, handle: unknown) => this.answer(message, handle));
    child.on('error', (error) => this.end(`the listener helper could not run: ${error.message}`));
    child.on('exit', (code, signal) => this.end(`the listener helper exited (${signal ?? `code ${code ?? '?'}`})${this.stderr.trim() === '' ? '' : `: ${this.stderr.trim()}`}`));
    // A helper must not keep the host alive: neither its process, nor its stderr, nor its channel, which Node refs on
    // the next tick after a 'message' listener is added.
    child.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    process.nextTick(() => (child.channel as { unref?: () => void } | null | undefined)?.unref?.());
  }

  static start(python: string): ListenerHelper {
    const child = spawn(python, ['-I', '-S', '-c', HELPER_SCRIPT, String(process.pid), String(SANDBOX_PROXY_PORT), String(proxySettings.listenBacklog)], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {},
      cwd: '/',
      // Its own session: a terminal's signals aimed at the host's group do not end it under the host's running plugins.
      detached: true,
    });
    return new ListenerHelper(child);
  }

  get alive(): boolean {
    return this.gone === undefined;
  }

  listenIn(pid: number, launcher: number): Promise<Server | SandboxListenerFailure> {
    if (this.gone !== undefined) return Promise.resolve(this.gone);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.send({ id, pid, launcher }, (error) => {
        if (error) this.settle(id, { cause: 'helper_unavailable', message: `cannot reach the listener helper: ${error.message}` });
      });
    });
  }

  private settle(id: number, outcome: Server | SandboxListenerFailure): void {
    const waiter = this.waiting.get(id);
    this.waiting.delete(id);
    if (waiter !== undefined) waiter(outcome);
    else if (outcome instanceof Server) outcome.close();
  }

  private answer(message: unknown, handle: unknown): void {
    if (message === null || typeof message !== 'object') return;
    const fields = message as Record<string, unknown>;
    if (typeof fields.listener === 'number' && handle instanceof Server) {
      // An accept that fails (libuv reports what its EMFILE fallback cannot absorb) costs the plugin one connection, never the host its life.
      handle.on('error', () => undefined);
      this.settle(fields.listener, handle);
    } else if (typeof fields.id === 'number') {
      const cause = fields.cause === 'shared_namespace' ? 'shared_namespace' : 'listen_failed';
      this.settle(fields.id, { cause, message: String(fields.message) });
    }
  }

  private end(message: string): void {
    this.gone ??= { cause: 'helper_unavailable', message };
    for (const id of [...this.waiting.keys()]) this.settle(id, this.gone);
  }
}

let helper: ListenerHelper | undefined;

/** CAP_SYS_PTRACE (include/uapi/linux/capability.h). */
const CAP_SYS_PTRACE = 19n;

let entersLauncherSandboxes: boolean | undefined;

/**
 * Whether the listener helper this host starts may open the network
 * namespace of the launcher's sandbox: its process 1 is not dumpable, so
 * /proc/<pid>/ns/net opens only for a process holding CAP_SYS_PTRACE. The
 * helper is a fresh program of the host's user: a root host's gets its
 * bounding set (a container's or a service's may lack the capability),
 * any other user's gets none. Read once.
 */
export function helperEntersLauncherSandboxes(): boolean {
  if (entersLauncherSandboxes === undefined) {
    let bounding = 0n;
    try {
      bounding = BigInt(`0x${/^CapBnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
    } catch {
      bounding = 0n;
    }
    entersLauncherSandboxes = process.getuid?.() === 0 && ((bounding >> CAP_SYS_PTRACE) & 1n) === 1n;
  }
  return entersLauncherSandboxes;
}

function runningHelper(): ListenerHelper | SandboxListenerFailure {
  if (helper?.alive === true) return helper;
  const python = proxySettings.listenerHelperPythons.find((path) => existsSync(path));
  if (python === undefined) {
    return { cause: 'helper_unavailable', message: `no Python 3 to run the listener helper (looked for ${proxySettings.listenerHelperPythons.join(', ')})` };
  }
  helper = ListenerHelper.start(python);
  return helper;
}

/** The sandbox's first process, from bubblewrap's `--info-fd` report (`{"child-pid": N, …}`), read to its end. */
function sandboxPid(report: Readable): Promise<number | SandboxListenerFailure> {
  return new Promise((resolve) => {
    let text = '';
    report.setEncoding('utf8');
    report.on('data', (chunk: string) => (text += chunk));
    report.on('error', (error) => resolve({ cause: 'launcher_report', message: `cannot read the launcher's report: ${error.message}` }));
    report.on('end', () => {
      let pid: unknown;
      try {
        pid = (JSON.parse(text) as Record<string, unknown>)['child-pid'];
      } catch {
        pid = undefined;
      }
      resolve(Number.isSafeInteger(pid) && (pid as number) > 1 ? (pid as number) : { cause: 'launcher_report', message: `the launcher did not report its sandbox's process (${JSON.stringify(text.slice(0, 200))})` });
    });
  });
}

/**
 * A listening socket on the proxy address (127.0.0.1, `sandboxProxyPort`)
 * inside the network namespace of the sandbox `launched` reports on its
 * report pipe (bubblewrap's `--info-fd`), held by the host only. Ask for it
 * while the launcher still holds the sandbox back (before its seccomp
 * program is written), so the listener exists before any code of the plugin
 * runs. The helper checks that the reported process is still the
 * launcher's child once it holds its namespace, so a process id reused
 * meanwhile never gets the listener. Every sandbox has a namespace and a
 * listener of its own: which plugin a connection belongs to is known by the
 * listener it arrived on.
 */
export function sandboxProxyListener(launched: LaunchedLauncher): ResultAsync<Server, SandboxListenerFailure> {
  const { report, pid: launcher } = launched;
  if (report === undefined || launcher === undefined) return errAsync({ cause: 'launcher_report', message: 'the launcher was started without a report pipe' });
  return ResultAsync.fromSafePromise(sandboxPid(report)).andThen((pid) => {
    if (typeof pid !== 'number') return errAsync(pid);
    const running = runningHelper();
    if (!(running instanceof ListenerHelper)) return errAsync(running);
    return ResultAsync.fromSafePromise(running.listenIn(pid, launcher)).andThen((outcome) => (outcome instanceof Server ? okAsync(outcome) : errAsync(outcome)));
  });
}
