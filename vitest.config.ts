import { defineConfig } from 'vitest/config';

/**
 * Pure-logic test files: no subprocess, no sandbox, no fuzz budget, no reliability scenario, no load test.
 * `npm run test:fast` runs only these; `npm test` runs them with everything else. Named by file (any folder, so a
 * file moved between folders stays in); a file not named here runs as an integration test.
 */
export const UNIT = [
  'recheckPinnedCode', 'shellInterpreters', 'moduleEntryBinding', 'packageTree',
  'CatalogEncoder', 'consistency', 'serialization',
  'args',
  'adversarialMap', 'docsIndex',
  'EnvDenylist.property', 'ErrorMapper', 'registry', 'ioError', 'HostEvents',
  'LineReader',
  'harness', 'regressions',
  'CrashPolicy', 'relativeDates',
  'archiveHeaders', 'entryName', 'zip', 'verification', 'StagingTree',
  'corpus', 'forms', 'matrix', 'robustness', 'schemaRefs',
  'NamespaceLock',
  'StderrRing', 'childPluginProcessCreate',
  'bubblewrapArgs', 'controlGroups', 'nodeRuntimePaths', 'pluginIdentity', 'seatbeltProfile', 'seccompFilter', 'writeDir',
  'FileSecretStore', 'seedNamesNeverStored',
  'InFlightLimiter', 'inProcess', 'verifiedEntryArgs', 'loadPlugins', 'handshakeChecks',
  'CallDeadlines', 'CallWait', 'PluginProcessTransport', 'mcpFailures', 'toolsMismatch', 'wire',
  'assertions', 'testProjects', 'folderCycles', 'LazyStart', 'publicStatics', 'grantRules', 'versionRange', 'officialSchemas', 'destinations', 'egressDeclaration',
  'pythonPath',
  'jsonLocations',
].map((name) => `test/**/${name}.test.ts`);
// Names also used by integration files elsewhere.
UNIT.push('test/shapes/esm/units.test.ts');

const ALL = ['test/**/*.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    // Builds the sandbox launcher the sources use (native/build/), as `npm run build` does into dist/.
    globalSetup: ['test/sandbox/launcherSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      { extends: true, test: { name: 'integration', include: ALL, exclude: UNIT } },
    ],
  },
});
