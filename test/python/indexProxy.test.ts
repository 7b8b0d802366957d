/**
 * With a package index (pythonIndexUrl) pip runs in a network namespace of
 * its own and reaches only the index, through the host's origin-only proxy
 * (review R9 N1): until then the confinement shared the host's network, so
 * pip, and a build backend pip ran for a direct reference of a wheel the
 * index served, reached every address the host reaches (its loopback
 * services, the LAN, 169.254.169.254). A real local index serves the wheels;
 * a loopback "trap" port stands for everything else and must see nothing.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer, Server as NetServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import type { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { CONFINEMENT_SECCOMP_FD, confinedCommand } from '../../src/installer/installConfinement.js';
import { originOf, originOnlyProxy } from '../../src/installer/originProxy.js';
import { indexOrigins } from '../../src/installer/pythonVenv.js';
import settings from '../../etc/python-install.json' with { type: 'json' };
import { HostPool } from '../support/hostHarness.js';
import { buildWheels, MCP_STANDIN, pythonPackage, PYTHON_SEARCH_PATH } from '../support/pythonPackages.js';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const pool = new HostPool();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await pool.cleanup();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A loopback port that counts every connection made to it. */
async function trapPort(): Promise<{ port: number; connections: () => number }> {
  let count = 0;
  const server: TcpServer = createTcpServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  cleanups.push(() => new Promise((closed) => server.close(closed)));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

/** An HTTP server on loopback recording request paths; `files` are served by name under /files/. */
async function httpOrigin(pages: (path: string, base: string) => string | undefined, files: Record<string, Buffer> = {}): Promise<{ base: string; requested: string[] }> {
  const requested: string[] = [];
  let base = '';
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '';
    requested.push(path);
    const file = Object.entries(files).find(([name]) => path === `/files/${name}`);
    const page = pages(path, base);
    if (file !== undefined) response.end(file[1]);
    else if (page !== undefined) response.writeHead(200, { 'content-type': 'text/html' }).end(page);
    else response.writeHead(404).end();
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise((closed) => server.close(closed)));
  return { base, requested };
}

// A wheel written entry by entry (with its RECORD), so that its METADATA says exactly what the test needs.
const WHEEL_WRITER = `
import base64, hashlib, json, sys, zipfile
path, name, requires, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
info = f'{name}-1.0.0.dist-info'
files = dict(extra)
files[f'{info}/METADATA'] = f'Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0.0\\n' + ''.join(f'Requires-Dist: {r}\\n' for r in requires)
files[f'{info}/WHEEL'] = 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'
digest = lambda v: base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b'=').decode()
files[f'{info}/RECORD'] = ''.join(f'{k},sha256={digest(v)},{len(v)}\\n' for k, v in files.items()) + f'{info}/RECORD,,\\n'
with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
    for k, v in files.items(): z.writestr(k, v)
`;

async function wheelBytes(name: string, requires: readonly string[], files: Record<string, string>): Promise<[string, Buffer]> {
  const dir = await tempDir('python-wheel-');
  const file = `${name}-1.0.0-py3-none-any.whl`;
  await run('/usr/bin/python3', ['-c', WHEEL_WRITER, join(dir, file), name, JSON.stringify(requires), JSON.stringify(files)]);
  return [file, await readFile(join(dir, file))];
}

/** The simple page of `project` linking `wheel` at `fileBase`. */
const simplePage = (project: string, wheel: string, fileBase: string) => (path: string, base: string) =>
  path === `/simple/${project}/` ? `<a href="${fileBase === '' ? base : fileBase}/files/${wheel}">${wheel}</a>\n` : undefined;

describe('pip with a package index reaches the index alone', () => {
  it("installs through the host's proxy from a local index", async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    cleanups.push(() => rm(pkg, { recursive: true, force: true }));
    const wheels = await tempDir('python-index-');
    await buildWheels([MCP_STANDIN], wheels);
    const [wheel] = await readdir(wheels);
    const index = await httpOrigin(simplePage('mcp', wheel!, ''), { [wheel!]: await readFile(join(wheels, wheel!)) });
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await host.install(pkg, { canary: false, pythonIndexUrl: `${index.base}/simple/` });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    expect(index.requested).toContain(`/files/${wheel!}`);
    expect((await host.list())._unsafeUnwrap()).toHaveLength(1);
  });

  it("goes through the host's own proxy (HTTP_PROXY) when the host has one: the confinement's only route is the host's", async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    cleanups.push(() => rm(pkg, { recursive: true, force: true }));
    const wheels = await tempDir('python-index-');
    await buildWheels([MCP_STANDIN], wheels);
    const [wheel] = await readdir(wheels);
    const index = await httpOrigin(simplePage('mcp', wheel!, ''), { [wheel!]: await readFile(join(wheels, wheel!)) });
    // A real proxy standing for the company's: absolute-form requests only, forwarded, each recorded.
    const asked: string[] = [];
    const corp: Server = createServer((request, response) => {
      asked.push(request.url ?? '');
      const target = new URL(request.url ?? '');
      const forwarded = httpRequest({ host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, headers: { host: target.host, connection: 'close' } }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      forwarded.on('error', () => response.destroy());
      forwarded.end();
    });
    await new Promise<void>((listening) => corp.listen(0, '127.0.0.1', listening));
    cleanups.push(() => new Promise((closed) => (corp.closeAllConnections(), corp.close(closed))));
    const saved = { HTTP_PROXY: process.env['HTTP_PROXY'], NO_PROXY: process.env['NO_PROXY'], no_proxy: process.env['no_proxy'] };
    cleanups.push(async () => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    process.env['HTTP_PROXY'] = `http://127.0.0.1:${(corp.address() as AddressInfo).port}`;
    delete process.env['NO_PROXY'];
    delete process.env['no_proxy'];
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const installed = await host.install(pkg, { canary: false, pythonIndexUrl: `${index.base}/simple/` });
    expect(installed.isOk(), JSON.stringify(installed)).toBe(true);
    expect(asked).toContain(`${index.base}/simple/mcp/`);
    expect(asked).toContain(`${index.base}/files/${wheel!}`);
    expect(index.requested).toContain(`/files/${wheel!}`);
  });

  it('refuses a file the index links on another origin: pip fails naming it, and that origin sees no request', async () => {
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    cleanups.push(() => rm(pkg, { recursive: true, force: true }));
    const wheels = await tempDir('python-index-');
    await buildWheels([MCP_STANDIN], wheels);
    const [wheel] = await readdir(wheels);
    // The index names a file on a host of the host's network; pip used to fetch it from there.
    const elsewhere = await httpOrigin(() => undefined, { [wheel!]: await readFile(join(wheels, wheel!)) });
    const index = await httpOrigin(simplePage('mcp', wheel!, elsewhere.base));
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const error = (await host.install(pkg, { canary: false, pythonIndexUrl: `${index.base}/simple/` }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_PYTHON_INSTALL_FAILED', details: { reason: 'pip_failed', refused: [`${elsewhere.base}/files/${wheel!}`] } });
    expect(error.message).toContain(`${elsewhere.base}/files/${wheel!}`);
    expect(index.requested).toContain('/simple/mcp/');
    expect(elsewhere.requested).toEqual([]);
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
  });

  it('gives the build code pip runs for an index wheel no network but the proxy, which refuses anything but the index', async () => {
    const trap = await trapPort();
    const pkg = await pythonPackage(join(root, 'fixtures/plugins/python-console-script'), []);
    cleanups.push(() => rm(pkg, { recursive: true, force: true }));
    // A source tree shipped in the package; the index's wheel requires it by a direct reference (pip runs the working
    // directory's tree: the install root), so pip builds it, with the network the index needed, while it installs.
    const source = join(pkg, 'bdep-src');
    // pip's hook process runs in the tree and joins backend-path to the tree's path, /proc/self/cwd/bdep-src, which
    // from there is bdep-src/bdep-src: the backend is put there.
    await mkdir(join(source, 'bdep-src'), { recursive: true });
    await writeFile(join(source, 'pyproject.toml'), '[project]\nname = "bdep"\nversion = "1.0"\n\n[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n');
    const backend = [
      'import socket, urllib.request, urllib.parse',
      `TRAP, PROXY = ${trap.port}, "http://127.0.0.1:${settings.indexProxyPort}"`,
      'def attempt(action):',
      '    try:',
      '        return str(action())',
      '    except urllib.error.HTTPError as error:',
      '        return str(error.code)',
      '    except Exception as error:',
      '        return type(error).__name__',
      'proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": PROXY}))',
      'seen = {',
      '    "direct": attempt(lambda: socket.create_connection(("127.0.0.1", TRAP), timeout=5).close()),',
      '    "proxied": attempt(lambda: proxied.open(f"http://127.0.0.1:{TRAP}/", timeout=5).status),',
      '}',
      'def report(base):',
      '    query = urllib.parse.urlencode(seen)',
      '    for opener in (proxied, urllib.request.build_opener(urllib.request.ProxyHandler({}))):',
      '        try:',
      '            return opener.open(f"{base}/ran?{query}", timeout=5)',
      '        except Exception:',
      '            pass',
      'def get_requires_for_build_wheel(config_settings=None): return []',
      'def prepare_metadata_for_build_wheel(d, config_settings=None): raise RuntimeError("stop")',
      'def build_wheel(d, config_settings=None, metadata_directory=None): raise RuntimeError("stop")',
      '',
    ];
    const [file, bytes] = await wheelBytes('mcp', ['bdep @ file:///proc/self/cwd/bdep-src'], { 'mcp/__init__.py': '' });
    const index = await httpOrigin(simplePage('mcp', file, ''), { [file]: bytes });
    await writeFile(join(source, 'bdep-src', 'backend.py'), [...backend, `report(${JSON.stringify(index.base)})`, ''].join('\n'));
    const host = await pool.open(await pool.profile(), { interpreterSearchPath: PYTHON_SEARCH_PATH });
    const outcome = await host.install(pkg, { canary: false, pythonIndexUrl: `${index.base}/simple/` });
    expect(outcome.isErr()).toBe(true);
    // The backend ran (it reported to the index, through the proxy) ...
    const ran = index.requested.find((path) => path.startsWith('/ran?'));
    expect(ran, JSON.stringify({ requested: index.requested, outcome })).toBeDefined();
    // ... reached nothing by dialling (its namespace has no route out) and nothing else through the proxy.
    expect(Object.fromEntries(new URLSearchParams(ran!.slice('/ran?'.length)))).toEqual({ direct: 'ConnectionRefusedError', proxied: '403' });
    expect(trap.connections()).toBe(0);
  });

  it('confines a command run as the host user the same way: no route out, the proxy address leads to the host, which admits the index only', async () => {
    const trap = await trapPort();
    const index = await httpOrigin((path) => (path === '/simple/' ? 'index page' : undefined));
    const proxy = originOnlyProxy([originOf(new URL(index.base))], 'only the package index is reachable while pip installs');
    cleanups.push(() => proxy.close());
    const writable = await tempDir('python-confined-');
    const python = '/usr/bin/python3';
    const program = [
      'import json, socket, urllib.request',
      `TRAP, PROXY, INDEX = ${trap.port}, "http://127.0.0.1:${settings.indexProxyPort}", ${JSON.stringify(index.base)}`,
      'def attempt(action):',
      '    try: return str(action())',
      '    except urllib.error.HTTPError as error: return str(error.code)',
      '    except Exception as error: return type(error).__name__',
      'proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": PROXY}))',
      'print(json.dumps({',
      '    "direct": attempt(lambda: socket.create_connection(("127.0.0.1", TRAP), timeout=5).close()),',
      '    "index": attempt(lambda: proxied.open(f"{INDEX}/simple/", timeout=5).read().decode()),',
      '    "trap": attempt(lambda: proxied.open(f"http://127.0.0.1:{TRAP}/", timeout=5).status),',
      '}))',
    ].join('\n');
    // No identity: the command runs as the host's user, as on a host that is not root (bubblewrap's --unshare-all).
    const command = confinedCommand([python, '-I', '-c', program], { writable, interpreter: python, tmpBytes: 1 << 20, proxyPort: settings.indexProxyPort })._unsafeUnwrap();
    expect(command.handsOverListener).toBe(true);
    const child = spawn(command.argv[0]!, command.argv.slice(1), { env: { PATH: PYTHON_SEARCH_PATH }, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'ipc'] });
    child.on('message', (_message: unknown, handle: unknown) => (handle instanceof NetServer ? proxy.serve(handle) : undefined));
    (child.stdio[CONFINEMENT_SECCOMP_FD] as Writable).end(command.seccomp);
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const code = await new Promise<number | null>((exited) => child.on('close', exited));
    expect(code, output).toBe(0);
    expect(JSON.parse(output.trim().split('\n').at(-1) ?? '{}')).toEqual({ direct: 'ConnectionRefusedError', index: 'index page', trap: '403' });
    expect(trap.connections()).toBe(0);
    expect(proxy.refused).toEqual([`http://127.0.0.1:${trap.port}/`]);
  });

  it('admits the index origin, and for PyPI the host its pages link the files on', () => {
    expect(indexOrigins('https://pypi.org/simple/')).toEqual(['pypi.org:443', 'files.pythonhosted.org:443']);
    expect(indexOrigins('https://Mirror.Example:8443/pypi/simple/')).toEqual(['mirror.example:8443']);
    expect(indexOrigins('http://127.0.0.1:8080/simple/')).toEqual(['127.0.0.1:8080']);
  });
});
