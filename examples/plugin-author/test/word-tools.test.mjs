// The plugin's own test suite, written the way its author would: validate the
// package with the host's exact codes, start it in a throwaway profile inside
// the real sandbox, check its tools against the manifest, run its canary, call it.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectHostError, expectOk, startPlugin, validatePluginDir } from 'mcp-plugin-host/testing';

// The folder the host installs: only what the plugin ships, not this repository (its node_modules, its tests).
const pluginDir = fileURLToPath(new URL('../plugin', import.meta.url));

describe('word-tools', () => {
  it('passes every install check the host runs', async () => {
    const report = expectOk(await validatePluginDir(pluginDir));
    expect(report.violations).toEqual([]);
    expect(report.pluginId).toBe('word-tools');
  });

  describe('running in the sandbox', () => {
    let plugin;
    beforeAll(async () => {
      plugin = expectOk(await startPlugin(pluginDir));
    });
    afterAll(async () => plugin?.close());

    it('lists exactly the tools its manifest declares', async () => {
      const tools = await plugin.expectToolsMatchManifest();
      expect(tools.map((t) => t.name).sort()).toEqual(['count_words', 'shout']);
    });

    it('passes its declared canary', async () => {
      expect(expectOk(await plugin.canary({ live: true })).status).toBe('passed');
    });

    it('counts words', async () => {
      const result = expectOk(await plugin.call('count_words', { text: 'the quick brown fox' }));
      expect(JSON.parse(result.value.content[0].text)).toEqual({ success: true, data: { words: 4 } });
    });

    it('reports bad input as the host code INVALID_ARGS', async () => {
      const error = expectHostError(await plugin.call('shout', { text: 42 }), 'INVALID_ARGS');
      expect(error.source_error_code).toBe('INVALID_INPUT');
    });

    it('runs with no network and writes confined to its data directory', async () => {
      const info = expectOk(await plugin.info());
      expect(info.enforced_capabilities?.enforced).toBe(true);
      expect(info.enforced_capabilities?.network).toBe(false);
    });
  });
});
