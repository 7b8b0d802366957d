import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };

/** The port of the proxy address, on 127.0.0.1 of each plugin's own network namespace (see `sandboxProxyListener`). */
export const SANDBOX_PROXY_PORT: number = proxySettings.sandboxProxyPort;

/** The proxy variables a plugin with a destination list gets, added to its environment. */
export function proxyEnvironment(): Record<string, string> {
  const proxy = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  const noProxy = proxySettings.noProxy.join(',');
  // Both spellings: curl and Python read the lower-case ones (curl ignores HTTP_PROXY), Node and Go the upper-case.
  // Node's own fetch and http honour them only with NODE_USE_ENV_PROXY=1 (Node 22.21+ and 24.5+); older versions ignore it.
  return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, NO_PROXY: noProxy, http_proxy: proxy, https_proxy: proxy, no_proxy: noProxy, NODE_USE_ENV_PROXY: '1' };
}
