/**
 * What an upgrade is asked about, field by field: the powers it adds against
 * the version accepted before, those the caller's own grant names, and the
 * text the question and a refusal show. The installs that use them are in
 * reinstall.test.ts; these are the cases no fixture there reaches (a write
 * directory, egress beside the whole network, quoting).
 */
import { describe, expect, it } from 'vitest';
import type { DeclaredCapabilities } from '../../src/manifest/model.js';
import { addedCapabilities, addedCapabilityText, riskChangeText, ungrantedCapabilities } from '../../src/installer/trust.js';

const none: DeclaredCapabilities = { network: false, fs_write_dir: '', env_allow: [] };

describe('addedCapabilities', () => {
  it('names each new power once, and nothing for the same or fewer', () => {
    expect(addedCapabilities(none, none)).toEqual([]);
    expect(addedCapabilities({ ...none, network: true, env_allow: ['A', 'B'] }, { ...none, env_allow: ['A'] })).toEqual([]);
    expect(
      addedCapabilities({ ...none, env_allow: ['A'], client_requests: ['roots'] }, { ...none, network: true, env_allow: ['A', 'B', 'B'], client_requests: ['roots', 'sampling', 'sampling'] }),
    ).toEqual([
      { field: 'network', value: true },
      { field: 'env_allow', value: 'B' },
      { field: 'client_requests', value: 'sampling' },
    ]);
  });

  it('counts a write directory outside the old one, not one inside it, and egress only while neither has the whole network', () => {
    expect(addedCapabilities({ ...none, fs_write_dir: 'out' }, { ...none, fs_write_dir: 'out/sub' })).toEqual([]);
    expect(addedCapabilities({ ...none, fs_write_dir: 'out' }, { ...none, fs_write_dir: 'outside' })).toEqual([{ field: 'fs_write_dir', value: 'outside' }]);
    expect(addedCapabilities({ ...none, egress: ['a.example.com:443'] }, { ...none, egress: ['a.example.com:443', 'b.example.com:443'] })).toEqual([
      { field: 'egress', value: 'b.example.com:443' },
    ]);
    expect(addedCapabilities({ ...none, network: true }, { ...none, egress: ['b.example.com:443'] })).toEqual([]);
    expect(addedCapabilities(none, { ...none, network: true, egress: ['b.example.com:443'] })).toEqual([{ field: 'network', value: true }]);
  });
});

describe('ungrantedCapabilities', () => {
  const added = addedCapabilities(
    { ...none, fs_write_dir: 'out' },
    { network: true, fs_write_dir: 'other', env_allow: ['A', 'B'], client_requests: ['sampling', 'roots'] },
  );

  it('keeps every power without a grant, and drops exactly those the grant names', () => {
    expect(ungrantedCapabilities(added, undefined)).toEqual(added);
    expect(ungrantedCapabilities(added, { network: true, env_allow: ['A'], client_requests: ['roots'] })).toEqual([
      { field: 'fs_write_dir', value: 'other' },
      { field: 'env_allow', value: 'B' },
      { field: 'client_requests', value: 'sampling' },
    ]);
    expect(ungrantedCapabilities(added, { network: false, fs_write_dir: 'other', env_allow: ['A', 'B'], client_requests: ['sampling', 'roots'] })).toEqual([
      { field: 'network', value: true },
    ]);
  });

  it('takes a granted egress list as the whole list, and an empty one as none granted', () => {
    const egress = addedCapabilities(none, { ...none, egress: ['b.example.com:443'] });
    expect(ungrantedCapabilities(egress, { egress: ['b.example.com:443'] })).toEqual([]);
    expect(ungrantedCapabilities(egress, { egress: [] })).toEqual(egress);
  });
});

describe('texts', () => {
  it('shows a power by field and value, quoting a value beyond plain characters', () => {
    expect(addedCapabilityText({ field: 'network', value: true })).toBe('network');
    expect(addedCapabilityText({ field: 'egress', value: '*.example.com:443' })).toBe('egress *.example.com:443');
    expect(addedCapabilityText({ field: 'fs_write_dir', value: 'a b\nnetwork  no' })).toBe('fs_write_dir "a b\\nnetwork  no"');
  });

  it('names the op id beside the tool only where it does not end in the tool name', () => {
    const rated = { risk_class: 'destructive', confirmation_policy: 'none' } as const;
    const to = { risk_class: 'read', confirmation_policy: 'none' } as const;
    expect(riskChangeText({ name: 'greet', op_id: 'plug.greeter.greet', from: rated, to })).toBe('greet destructive→read');
    expect(riskChangeText({ name: 'search_v2', op_id: 'plug.notes.search', from: rated, to })).toBe('search_v2 (op plug.notes.search) destructive→read');
    expect(riskChangeText({ name: 'wipe', op_id: 'plug.x.wipe_all', from: null, to: rated })).toBe('wipe (op plug.x.wipe_all) new→destructive');
  });
});
