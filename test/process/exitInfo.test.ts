import { describe, expect, it } from 'vitest';
import { exitInfoOf } from '../../src/process/exitInfo.js';

const plain = { hostSentKill: false, viaLauncher: false };

describe('exitInfoOf', () => {
  it('reports a normal exit status', () => {
    expect(exitInfoOf(3, null, plain)).toEqual({ code: 3, signal: null, status: 3, description: 'exited with status 3' });
  });

  it('turns a signal into 128 + signo', () => {
    expect(exitInfoOf(null, 'SIGTERM', plain)).toMatchObject({ status: 143, description: 'killed by SIGTERM (143)' });
  });

  it('says 137 is likely out of memory unless the host sent the SIGKILL', () => {
    expect(exitInfoOf(null, 'SIGKILL', plain).description).toBe('killed by SIGKILL (137, likely out of memory)');
    expect(exitInfoOf(null, 'SIGKILL', { ...plain, hostSentKill: true }).description).toBe(
      'killed by SIGKILL (137, sent by the host after the stop grace period)',
    );
  });

  it('says a SIGKILL the host sent while the sandbox was set up came before the plugin ran', () => {
    expect(exitInfoOf(null, 'SIGKILL', { ...plain, hostSentKill: true, killedInSetup: true, viaLauncher: true }).description).toBe(
      'killed by SIGKILL (137, sent by the host: stopped while its sandbox was set up, before the plugin ran)',
    );
  });

  it('reads a launcher status above 128 as a signal inside the sandbox', () => {
    const info = exitInfoOf(137, null, { ...plain, viaLauncher: true });
    expect(info).toMatchObject({ code: 137, signal: null, status: 137 });
    expect(info.description).toBe('exited with status 137: killed by SIGKILL inside the sandbox, likely out of memory');
    expect(exitInfoOf(137, null, plain).description).toBe('exited with status 137');
  });

  it('explains a launcher that could not execute the plugin', () => {
    const info = exitInfoOf(1, null, { ...plain, viaLauncher: true, execFailure: 'bwrap: execvp /x: No such file or directory' });
    expect(info.description).toBe('could not execute the plugin: bwrap: execvp /x: No such file or directory (status 1)');
  });
});
