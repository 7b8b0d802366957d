/**
 * Which packages of an npm lockfile have install scripts (the ones `--ignore-scripts` kept from running): pure
 * logic over a lockfile's `packages` map.
 */
import { describe, expect, it } from 'vitest';
import { packagesWithInstallScripts } from '../../src/installer/npmInstallScripts.js';

describe('packagesWithInstallScripts', () => {
  it('names nested, scoped and workspace packages by their own name, each once, in lockfile order', () => {
    const lock = {
      packages: {
        '': { name: 'root', hasInstallScript: true },
        'node_modules/sqlite3': { hasInstallScript: true },
        'node_modules/a/node_modules/@scope/native': { hasInstallScript: true },
        'node_modules/plain': {},
        'packages/local-addon': { hasInstallScript: true },
        'node_modules/other/node_modules/sqlite3': { hasInstallScript: true },
      },
    };
    expect(packagesWithInstallScripts(lock)).toEqual(['sqlite3', '@scope/native', 'packages/local-addon']);
  });

  it('reads nothing from a lockfile without packages', () => {
    expect(packagesWithInstallScripts(undefined)).toEqual([]);
    expect(packagesWithInstallScripts({ packages: 'no' })).toEqual([]);
  });
});
