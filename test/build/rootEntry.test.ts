/**
 * The root entry is the curated surface (issue 13, item 4): PluginHost and its types, HostError and the code
 * registry, the design card's modules and the ports. The loose helpers behind them, the protocol sessions and the
 * framing stay internal, so a host cannot come to depend on them.
 */
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';

const INTERNAL = [
  'putPlugin',
  'removePlugin',
  'recordFailure',
  'admitStart',
  'EMPTY_CONTENTS',
  'LineReader',
  'mapPluginError',
  'mapCallToolError',
  'parsePluginErrorEnvelope',
  'bindExecutable',
  'verifyExecutableBinding',
  'bindModuleEntry',
  'openPackageSource',
  'MANIFEST_FILE_NAMES',
  'formFromJsonDocument',
  'Installer',
  'ProfileLayout',
  'spawnPluginProcess',
  'trustedCommand',
  'esmRunnerCommand',
  'CaptureServer',
];
const SESSIONS = ['McpSession', 'NdjsonRpcSession', 'HandshakeSession', 'EsmSession', 'PluginProcessTransport'];

describe('the root entry', () => {
  it('does not export the loose helpers behind the design card modules', () => {
    expect(INTERNAL.filter((name) => name in root)).toEqual([]);
  });

  it('does not export the protocol session classes (no host needs them; PluginHost runs every shape)', () => {
    expect(SESSIONS.filter((name) => name in root)).toEqual([]);
  });

  it('keeps the installer\'s staged package out of the published types (a type-level check, made by tsc)', () => {
    // @ts-expect-error the staged package (staging root, discard()) is the installer's; inspect() reports an InspectedPackage
    type Staged = import('../../src/index.js').StagedPackage;
    const published: Staged[] = [];
    expect(published).toEqual([]);
  });
});
