/**
 * The CLI's question before an introspection start (a server without a manifest started once, with network, to
 * list its tools) names a registry change as the install question does: the start is the first code of the other
 * registry's package to run, and the 'npm registry' row above it is one row among many a person skims.
 */
import { describe, expect, it } from 'vitest';
import { trustLines, trustQuestion } from '../../src/cli/present.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { SAME_NAME_FROM_NPM } from './trustRequests.js';

// The start that lists the tools of a server without a manifest: with the network, before any tool is known.
const start: TrustRequest = { ...SAME_NAME_FROM_NPM, capabilities: { network: true, fs_write_dir: '', env_allow: [] }, tools: [], stage: 'introspection' };
const registryChange = { from: 'https://npm.internal.example/', to: 'https://registry.npmjs.org/' };

describe('trustQuestion before an introspection start', () => {
  it('names another npm registry, as the install question does', () => {
    const request = { ...start, registry_change: registryChange };
    expect(trustQuestion(request)).toBe('Start same-name once, with this other npm registry, with this network to list its tools?');
    expect(trustLines(request, 200).join('\n')).toContain('npm registry      https://npm.internal.example/ → https://registry.npmjs.org/');
    const { stage: _stage, ...install } = request;
    expect(trustQuestion({ ...install, tools: [{ name: 'look', risk_class: 'read' }] })).toBe('Install same-name with this other npm registry?');
  });

  it('names another npm package and new powers, and nothing when nothing changed', () => {
    expect(trustQuestion({ ...start, package_change: { from: 'same_name', to: 'same-name' }, added_capabilities: [{ field: 'network', value: true }] })).toBe(
      'Start same-name once, with this other npm package and these new powers, with this network to list its tools?',
    );
    expect(trustQuestion(start)).toBe('Start same-name once with this network to list its tools?');
  });
});
