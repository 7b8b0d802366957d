import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };

/** The port the bridge listens on, on 127.0.0.1 of the plugin's own network namespace. */
export const SANDBOX_PROXY_PORT: number = proxySettings.sandboxProxyPort;

/**
 * Runs inside the sandbox with the host's own Node, as the plugin's user and
 * under the plugin's seccomp filter: it needs no Unix socket of its own, only
 * the one end of the host's IPC socket pair it inherits. It listens on the
 * proxy address inside the plugin's network namespace (which has no other
 * interface than loopback), hands every accepted connection, unread, to the
 * host over that socket pair, and runs the plugin with exactly the
 * environment and descriptors it is given. The environment (secrets among
 * it) arrives as the first message on that socket pair, never on a command
 * line, which every local user can read in /proc: the socket pair is close-on-exec
 * in the bridge, so the plugin never holds it. It mirrors the plugin's exit
 * and leaves signals to the plugin, which receives them directly.
 */
const BRIDGE_SCRIPT = `
const net = require('net'), cp = require('child_process');
const [port, fdList, ...argv] = process.argv.slice(1);
const fds = fdList === '' ? [] : fdList.split(',').map(Number);
const slots = Array.from({ length: fds.length === 0 ? 0 : Math.max(...fds) - 2 }, (_, i) => (fds.includes(3 + i) ? 3 + i : 'ignore'));
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => undefined);
const server = net.createServer({ pauseOnConnect: true }, (c) => process.send('connection', c, (e) => { if (e) c.destroy(); }));
server.on('error', (e) => { process.stderr.write('egress bridge: ' + e.message + '\\n'); process.exit(125); });
const run = (env) => server.listen({ host: '127.0.0.1', port: Number(port) }, () => {
  const child = cp.spawn(argv[0], argv.slice(1), { stdio: ['inherit', 'inherit', 'inherit', ...slots], env });
  child.on('error', (e) => { process.stderr.write('egress bridge: cannot run the plugin: ' + e.message + '\\n'); process.exit(127); });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
});
process.once('message', (m) => {
  if (m === null || typeof m !== 'object' || m.env === null || typeof m.env !== 'object') { process.stderr.write('egress bridge: no environment from the host\\n'); process.exit(125); }
  run(m.env);
});
`;

/**
 * The command line that runs `argv` behind the bridge.
 *
 * @param nodePath - The host's Node binary (readable inside the sandbox).
 * @param pluginFds - The inherited descriptor numbers (3 and up) the plugin itself uses; others are not passed on.
 * The plugin's complete environment is sent to the bridge over the channel
 * ({@link bridgeEnvMessage}); the bridge itself runs with none of it.
 */
export function bridgedArgv(nodePath: string, pluginFds: readonly number[], argv: readonly string[]): string[] {
  return [nodePath, '-e', BRIDGE_SCRIPT, String(SANDBOX_PROXY_PORT), pluginFds.join(','), ...argv];
}

/** The first message the host sends the bridge: the plugin's complete environment, which the bridge waits for before it runs the plugin. */
export function bridgeEnvMessage(env: Readonly<Record<string, string>>): { readonly env: Readonly<Record<string, string>> } {
  return { env };
}

/** The proxy variables a plugin behind the bridge gets, added to its environment. */
export function proxyEnvironment(): Record<string, string> {
  const proxy = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  const noProxy = proxySettings.noProxy.join(',');
  // Both spellings: curl and Python read the lower-case ones (curl ignores HTTP_PROXY), Node and Go the upper-case.
  // Node's own fetch and http honour them only with NODE_USE_ENV_PROXY=1 (Node 22.21+ and 24.5+); older versions ignore it.
  return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, NO_PROXY: noProxy, http_proxy: proxy, https_proxy: proxy, no_proxy: noProxy, NODE_USE_ENV_PROXY: '1' };
}
