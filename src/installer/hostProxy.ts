/**
 * The host's own proxy, as its environment names it, for the origin-only
 * install proxy to dial through (originProxy.ts `upstream`). pip runs in a
 * confinement with no network but the host's origin-only proxy, which
 * dialled the index directly: a host that reaches the internet only through
 * a proxy of its own (a company network) could not use `--python-index`,
 * while npm, which runs on the host, is given that proxy. The variables are
 * the ones npm reads (HTTPS_PROXY for https, HTTP_PROXY for http, NO_PROXY),
 * read from the host process's environment, never the package's.
 */

const PROXY_NAMES: Readonly<Record<string, readonly string[]>> = {
  'https:': ['HTTPS_PROXY', 'https_proxy'],
  'http:': ['HTTP_PROXY', 'http_proxy'],
};
const NO_PROXY_NAMES = ['NO_PROXY', 'no_proxy'];

/**
 * Whether the host's NO_PROXY list exempts `hostname`: an entry `*` exempts
 * every name; another, its dot-separated labels ending the name
 * (`corp.example` and `.corp.example` exempt `pypi.corp.example`), as npm
 * matches it. Ports in entries are not read.
 */
export function exemptFromHostProxy(hostname: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const labels = hostname.toLowerCase().replace(/\.$/, '').split('.').reverse();
  const entries = NO_PROXY_NAMES.flatMap((name) => (env[name] ?? '').split(/[\s,]+/));
  return entries.some((entry) => {
    if (entry.trim() === '*') return true;
    const wanted = entry.trim().toLowerCase().replace(/:\d+$/, '').split('.').filter(Boolean).reverse();
    return wanted.length > 0 && wanted.every((label, i) => labels[i] === label);
  });
}

/**
 * The host's proxy for `origin` (`https://host:port/` or `http://host:port/`):
 * the first of its scheme's variables that is set, read as an `http:` proxy
 * URL (`proxy.corp:3128` as `http://proxy.corp:3128`), or undefined when
 * none is set, NO_PROXY exempts the host, or the value is not an `http:`
 * proxy URL (an https or SOCKS proxy is not spoken: the origin is then
 * dialled directly, as without one).
 */
export function hostProxyFor(origin: URL, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  const value = (PROXY_NAMES[origin.protocol] ?? []).map((name) => env[name]?.trim() ?? '').find((set) => set !== '');
  if (value === undefined || exemptFromHostProxy(origin.hostname.replace(/^\[|\]$/g, ''), env)) return undefined;
  let proxy: URL;
  try {
    proxy = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
  } catch {
    return undefined;
  }
  return proxy.protocol === 'http:' && proxy.hostname !== '' ? proxy : undefined;
}
