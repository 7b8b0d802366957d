import { randomBytes } from 'node:crypto';
import type { Server, Socket } from 'node:net';
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { unverifiedCommand } from '../process/spawnPluginProcess.js';
import { spawnChild, type LaunchedLauncher } from '../process/spawnChild.js';
import { nodeRuntimePaths, withScopeLauncher, type SandboxBackend } from './backends.js';
import { countingServer, probeReport, sandboxUnsupported } from './probe.js';
import { resolveLayout } from './SandboxLayout.js';
import { SANDBOX_PROXY_PORT } from '../egress/sandboxProxy.js';
import { sandboxProxyListener, type SandboxListenerFailure } from '../egress/sandboxListener.js';

/** What the probe plugin reports: the exchange through the proxy address (`ok` or an error code) and a direct connection attempt. */
interface EgressProbeReport {
  readonly proxied: string;
  readonly direct: string;
}

// Runs in the sandbox in place of a plugin, with the host's own Node.
const PROBE_SCRIPT = `
const net = require('net');
const [proxyPort, hostPort] = process.argv.slice(1, 3).map(Number);
const nonce = process.argv[3];
const exchange = (port, say) => new Promise((done) => {
  const s = net.connect({ host: '127.0.0.1', port });
  let heard = '';
  s.setTimeout(3000);
  s.on('connect', () => { if (say) s.write(say); else { s.end(nonce); done('connected'); } });
  s.on('data', (d) => { heard += d; });
  s.on('end', () => done(heard));
  s.on('error', (e) => done(e.code || String(e)));
  s.on('timeout', () => { s.destroy(); done('timeout'); });
});
(async () => {
  const r = { proxied: await exchange(proxyPort, 'egress-probe'), direct: await exchange(hostPort) };
  process.stdout.write(JSON.stringify(r));
})();
`;

const HINT =
  "Plugins with an egress list need the system Python 3 (etc/egress/proxy.json, listenerHelperPythons) to open their proxy address inside the sandbox's network namespace, and the right to enter it (a root host, or the user namespace bubblewrap makes); run the plugin with network: true or without destinations, or fix the cause named here.";

/** PLUGIN_SANDBOX_UNSUPPORTED for a sandbox whose proxy listener could not be opened: its plugin does not start. */
export function listenerUnavailable(failure: SandboxListenerFailure): HostError {
  if (failure.cause === 'shared_namespace') {
    return sandboxUnsupported('enforcement_not_proved', `The sandbox has no network namespace of its own (${failure.message}).`, 'Refusing to run plugins with an egress list; check the launcher (bwrap) and its options.', {
      listener_cause: failure.cause,
    });
  }
  return sandboxUnsupported('egress_unavailable', `Cannot open the egress proxy address in the sandbox: ${failure.message}.`, HINT, { listener_cause: failure.cause });
}

/** Directories that already exist, to mount as the probe's install root and writable directory: the probe writes nothing, and makes no file a host killed meanwhile would leave behind. */
export interface EgressProbeDirectories {
  readonly installRoot: string;
  readonly writeDir: string;
}

async function runEgressProbe(backend: SandboxBackend, directories: EgressProbeDirectories): Promise<Result<void, HostError>> {
  // A listener on the host's loopback: reached from inside, the sandbox would not have a network namespace of its own.
  // Only the probe's connection counts (it sends the nonce): any process of the host's network reaches the listener,
  // and a networked plugin reads its port in /proc/net/tcp; its connection refused every egress plugin of the process.
  const nonce = randomBytes(16).toString('hex');
  const { server: hostListener, connections: directHits } = countingServer(nonce);
  let proxiedHits = 0;
  let sandboxListener: Server | undefined;
  const served = (socket: Socket): void => {
    proxiedHits++;
    socket.once('data', (data: Buffer) => socket.end(data.toString() === 'egress-probe' ? 'ok' : 'unexpected'));
    socket.on('error', () => socket.destroy());
  };
  try {
    const hostPort = await new Promise<number>((resolve, reject) => {
      hostListener.once('error', reject);
      hostListener.listen({ host: '127.0.0.1', port: 0 }, () => {
        const address = hostListener.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    const layout = resolveLayout({
      network: false,
      installRoot: directories.installRoot,
      writeDir: directories.writeDir,
      readOnlyPaths: nodeRuntimePaths(),
      hiddenPaths: [],
      secretPaths: [],
      systemPaths: backend.systemPaths,
    });
    if (layout.isErr()) return err(layout.error);
    const scoping = withScopeLauncher(backend, unverifiedCommand([process.execPath, '-e', PROBE_SCRIPT, String(SANDBOX_PROXY_PORT), String(hostPort), nonce], layout.value.installRoot));
    if (scoping.isErr()) return err(sandboxUnsupported('egress_unavailable', `The egress probe could not start: ${scoping.error}`, HINT));
    const { executable, scopeFd } = scoping.value;
    const firstFreeFd = 3 + executable.inheritFds.length;
    const { args, extraInput } = backend.launch(layout.value, executable.argv, firstFreeFd, firstFreeFd + 1, undefined, scopeFd);
    const gate = (launched: LaunchedLauncher) =>
      sandboxProxyListener(launched)
        .map((server) => {
          sandboxListener = server;
          server.on('connection', served);
        })
        .mapErr(listenerUnavailable);
    const spawned = await spawnChild(
      executable,
      { command: backend.command, args, env: {}, cwd: '/', gate, launcherReport: true, ...(extraInput ? { extraInput } : {}) },
      { tree: backend.tree, launcherFailure: backend.launcherFailure, stdinGraceMs: 0, termGraceMs: 1_000 },
    );
    if (spawned.isErr()) {
      const { code, details } = spawned.error;
      if (code === 'PLUGIN_SANDBOX_UNSUPPORTED') return err(spawned.error);
      return err(sandboxUnsupported('egress_unavailable', `The egress probe could not start: ${spawned.error.message}`, HINT, { spawn_code: code, ...(details ?? {}) }));
    }
    const child = spawned.value;
    const { report, exit } = await probeReport<EgressProbeReport>(child);
    if (report === undefined) {
      return err(sandboxUnsupported('egress_unavailable', `The egress probe did not report (${exit.description}): ${child.stderrTail().trim()}`, HINT, { stderr: child.stderrTail().trim() }));
    }
    if (report.direct === 'connected' || directHits() > 0) {
      return err(sandboxUnsupported('enforcement_not_proved', 'A sandboxed process with an egress list reached a listener on the host loopback directly.', 'Refusing to run plugins with an egress list; check the kernel, and the bubblewrap version or the Landlock launcher.', { report }));
    }
    if (report.proxied !== 'ok' || proxiedHits !== 1) {
      return err(sandboxUnsupported('egress_unavailable', `A connection to the proxy address in the sandbox did not reach the host (${report.proxied}).`, HINT, { report }));
    }
    return ok(undefined);
  } catch (cause) {
    return err(sandboxUnsupported('egress_unavailable', `The egress probe could not be set up: ${(cause as Error).message}`, HINT));
  } finally {
    sandboxListener?.close();
    hostListener.close();
  }
}

const probes = new Map<string, Promise<Result<void, HostError>>>();

/**
 * Proves, once per launcher per process, that the egress path works and is
 * the only one: in a sandbox without network, a connection to the proxy
 * address reaches the host through the listener the host opened in the
 * sandbox's namespace, and a connection to a listener on the host's
 * loopback does not. Runs in the directories of the first plugin that
 * needs it.
 */
export function probeEgress(backend: SandboxBackend, directories: EgressProbeDirectories): Promise<Result<void, HostError>> {
  const key = `${backend.name}:${backend.command}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runEgressProbe(backend, directories);
    probes.set(key, probe);
  }
  return probe;
}
