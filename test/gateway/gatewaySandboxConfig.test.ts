import { describe, expect, it } from 'vitest';
import { checkGatewayConfig, resolveGatewayConfig } from '../../src/gateway/gatewayConfig.js';
import { DEFAULT_SECRET_PATHS } from '../../src/sandbox/secretLocations.js';

describe('the gateway configuration key sandbox (--sandbox)', () => {
  it('becomes the host option sandbox.backend', async () => {
    const checked = checkGatewayConfig({ sandbox: 'landlock' });
    expect(checked.isOk()).toBe(true);
    const resolved = await resolveGatewayConfig(checked._unsafeUnwrap(), {});
    expect(resolved._unsafeUnwrap().host.sandbox).toEqual({ backend: 'landlock', secretPaths: DEFAULT_SECRET_PATHS });
  });

  it('leaves the backend to the host when the configuration names none', async () => {
    const resolved = await resolveGatewayConfig(checkGatewayConfig({})._unsafeUnwrap(), {});
    expect(resolved._unsafeUnwrap().host.sandbox).toEqual({ secretPaths: DEFAULT_SECRET_PATHS });
  });

  it('refuses a backend that does not exist, naming the key', () => {
    const checked = checkGatewayConfig({ sandbox: 'bwrap' }, 'serve.json');
    expect(checked.isErr()).toBe(true);
    expect(checked._unsafeUnwrapErr().message).toContain('/sandbox');
  });
});
