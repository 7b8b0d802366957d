/**
 * Seed 003: the strict `mcp-plugin.json` schema accepts every manifest the
 * seed's own text shows. The seed prints no manifest file verbatim; each case
 * below is the manifest its example describes (the fields and values are the
 * seed's), written out as data.
 */
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { CaptureServer } from '../../src/shapes/esm/CaptureServer.js';
import { reconcileCapabilities } from '../../src/shapes/esm/reconcile.js';

const validator = new ManifestValidator({ allowedShapes: ['esm-module'] });

function accepted(manifest: Record<string, unknown>): string[] {
  const result = validator.validateValue(manifest, 'open-discovery');
  return result.isOk() ? [] : [result.error.message, JSON.stringify(result.error.details)];
}

describe('seed 003: every manifest the seed shows passes the strict Open Discovery schema', () => {
  it('Loader Steps 1 "Validate Manifest": only the required fields name, version, sdk, entry, capabilities', () => {
    expect(accepted({ name: 'net-utils', version: '1.1.0', sdk: '@modelcontextprotocol/sdk', entry: 'dist/index.js', capabilities: {} })).toEqual([]);
  });

  it('Loader Steps 1 "Validate Manifest": the optional permissions, metadata and dependencies (string[] of plugin IDs)', () => {
    expect(
      accepted({
        name: 'net-utils',
        version: '1.1.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: { tools: [{ name: 'ping' }] },
        permissions: [{ id: 'network', reason: 'pings hosts' }],
        metadata: { displayName: 'Net utils', author: 'Open Discovery', tags: ['network'] },
        dependencies: ['core-utils'],
      }),
    ).toEqual([]);
  });

  it('Testing Plan 3: the all-capabilities-plugin (echo tool, mcp://docs/{id} resource, summarize prompt)', () => {
    expect(
      accepted({
        name: 'all-capabilities-plugin',
        version: '1.0.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: {
          tools: [{ name: 'echo', description: 'Echoes text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }],
          resources: [{ name: 'docs', uriTemplate: 'mcp://docs/{id}' }],
          prompts: [{ name: 'summarize', description: 'Summarize a text', argsSchema: { text: { type: 'string' } } }],
        },
      }),
    ).toEqual([]);
  });

  it('Registration Mapping: a tool declared with title, description, inputSchema, outputSchema and annotations', () => {
    expect(
      accepted({
        name: 'net-utils',
        version: '1.1.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: {
          tools: [
            {
              name: 'ping',
              title: 'Ping',
              description: 'Pings a host',
              inputSchema: { type: 'object', properties: { host: { type: 'string' } } },
              outputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
              annotations: { title: 'Ping a host', readOnlyHint: true, openWorldHint: true },
            },
          ],
        },
      }),
    ).toEqual([]);
  });

  it('Registration Mapping: a resource at a fixed URI (registerResource(name, uri, ...)) beside a template one', () => {
    expect(
      accepted({
        name: 'net-utils',
        version: '1.1.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: {
          resources: [
            { name: 'readme', uri: 'mcp://docs/readme', metadata: { title: 'Readme', description: 'The manual' } },
            { name: 'docs', uriTemplate: 'mcp://docs/{id}', title: 'Documents', metadata: { description: 'One document', mimeType: 'text/plain' } },
          ],
        },
      }),
    ).toEqual([]);
  });

  it('Registration Mapping: a prompt declared with title, description and argsSchema', () => {
    expect(
      accepted({
        name: 'all-capabilities-plugin',
        version: '1.0.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: { prompts: [{ name: 'summarize', title: 'Summarize', description: 'Summarize a text', argsSchema: { text: { type: 'string' } } }] },
      }),
    ).toEqual([]);
  });

  it('Example Loader: manifests whose dependencies are absent (m.dependencies ?? []) or name other plugins', () => {
    const base = { version: '1.0.0', sdk: '@modelcontextprotocol/sdk', entry: 'index.mjs', capabilities: {} };
    expect(accepted({ ...base, name: 'core-utils' })).toEqual([]);
    expect(accepted({ ...base, name: 'net-utils', dependencies: ['core-utils'] })).toEqual([]);
  });

  it('Structured Summary: net-utils 1.1.0 with 5 tools, 2 resources and 1 prompt', () => {
    expect(
      accepted({
        name: 'net-utils',
        version: '1.1.0',
        sdk: '@modelcontextprotocol/sdk',
        entry: 'dist/index.js',
        capabilities: {
          tools: ['ping', 'traceroute', 'dns_lookup', 'whois', 'port_scan'].map((name) => ({ name })),
          resources: [
            { name: 'interfaces', uri: 'mcp://net/interfaces' },
            { name: 'host', uriTemplate: 'mcp://net/hosts/{host}' },
          ],
          prompts: [{ name: 'diagnose' }],
        },
      }),
    ).toEqual([]);
  });

  it('Loader Steps 4 "Preflight Capture & Reconciliation": a declared fixed uri is compared with the one registered', () => {
    const manifest = validator
      .validateValue(
        { name: 'docs-plugin', version: '1.0.0', sdk: '@modelcontextprotocol/sdk', entry: 'index.mjs', capabilities: { resources: [{ name: 'readme', uri: 'mcp://docs/readme' }] } },
        'open-discovery',
      )
      ._unsafeUnwrap();
    const registeredAt = (uri: string) => {
      const capture = new CaptureServer();
      capture.registerResource('readme', uri, {}, () => ({ contents: [] }));
      return capture.registrations;
    };
    expect(reconcileCapabilities(manifest, registeredAt('mcp://docs/readme'))).toEqual([]);
    expect(reconcileCapabilities(manifest, registeredAt('mcp://docs/other')).map((m) => m.problem)).toEqual(['uri-differs']);
  });
});

describe('seed 003 Loader Steps 1 "Enforce required fields: name, version, sdk, entry, capabilities"', () => {
  const complete = (): Record<string, unknown> => ({ name: 'net-utils', version: '1.1.0', sdk: '@modelcontextprotocol/sdk', entry: 'dist/index.js', capabilities: {} });

  it.each(['name', 'version', 'sdk', 'entry', 'capabilities'])('a manifest without %s is refused with PLUGIN_MANIFEST_INVALID at that field', (field) => {
    const manifest = complete();
    delete manifest[field];
    const result = validator.inspectValue(manifest, 'open-discovery')._unsafeUnwrap();
    expect(result.violations.map((v) => [v.code, v.pointer])).toEqual([['PLUGIN_MANIFEST_INVALID', `/${field}`]]);
  });
});
