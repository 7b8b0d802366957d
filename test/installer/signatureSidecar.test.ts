/**
 * A signature sidecar that is not a regular file is refused at once. A FIFO at `<archive>.sig` blocked the open
 * until a writer came: the install hung, and a thread of the libuv pool with it. In the integration project because
 * the FIFO is made by mkfifo(1).
 */
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { openPackageSource } from '../../src/installer/openPackageSource.js';
import { ed25519Keys, tgzOf } from './craftArchives.js';
import { expectRefused, workspace, type Workspace } from './workspace.js';

let ws: Workspace;
let archive: string;
beforeEach(async () => {
  ws = await workspace();
  archive = await ws.file('plugin.tgz', tgzOf([{ path: 'manifest.json', data: '{"manifest_schema_version":1}' }]));
});
afterEach(async () => {
  await ws.dispose();
});

describe('the signature sidecar', () => {
  it('is refused when it is not a regular file instead of waiting on it (a FIFO blocks an open until a writer comes)', async () => {
    const keys = ed25519Keys();
    execFileSync('mkfifo', [`${archive}.sig`]);
    await expectRefused(await openPackageSource(archive, { stagingRoot: ws.stagingRoot, trustedKeys: [keys.pem] }), ws.stagingRoot, 'PLUGIN_SIGNATURE_INVALID', {
      reason: 'malformed',
    });
  });
});
