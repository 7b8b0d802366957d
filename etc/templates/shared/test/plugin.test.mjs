// The plugin's own tests, through mcp-plugin-host/testing: the host's install
// checks with its exact codes, then the plugin started in a throwaway profile
// inside the real sandbox, as an application embedding the host would run it.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectHostError, expectOk, startPlugin, validatePluginDir } from 'mcp-plugin-host/testing';

// The folder the host installs: only what the plugin ships, not this repository.
const pluginDir = fileURLToPath(new URL('../plugin', import.meta.url));

describe('{{id}}', () => {
  it('passes every install check the host runs', async () => {
    const report = expectOk(await validatePluginDir(pluginDir));
    expect(report.violations).toEqual([]);
    expect(report.pluginId).toBe('{{id}}');
  });

  describe('running in the sandbox', () => {
    let plugin;
    beforeAll(async () => {
      plugin = expectOk(await startPlugin(pluginDir));
    });
    afterAll(async () => plugin?.close());

    it('lists exactly the tools its manifest declares', async () => {
      const tools = await plugin.expectToolsMatchManifest();
      expect(tools.map((t) => t.name)).toEqual(['echo']);
    });

    it('passes its declared canary', async () => {
      expect(expectOk(await plugin.canary({ live: true })).status).toBe('passed');
    });

    it('echoes', async () => {
      const result = expectOk(await plugin.call('echo', { text: 'hello' }));
      expect(JSON.parse(result.value.content[0].text)).toEqual({ success: true, data: { text: 'hello' } });
    });

    it('reports bad input with the host code INVALID_ARGS', async () => {
      expectHostError(await plugin.call('echo', { text: '' }), 'INVALID_ARGS');
    });
  });
});
