/**
 * Seed 001's own names (GOOGLE_APPLICATION_CREDENTIALS, OPENAI_API_KEY,
 * ANTHROPIC_API_KEY, GUM_*, _GUM*) can never be a credential a user stores
 * for a plugin, even when `etc/env-denylist.json` is edited to list them in
 * `user_credentials`: the exclusion is in code. The edited file is given to
 * the real EnvDenylist module in place of the shipped one.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('../../etc/env-denylist.json', async (importOriginal) => {
  const shipped = ((await importOriginal()) as { default: { exact: string[]; user_credentials: string[] } }).default;
  const added = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'GUM_EDITED', '_GUM_EDITED', 'EDITED_SERVICE_TOKEN'];
  return { default: { ...shipped, exact: [...shipped.exact, 'GUM_EDITED', '_GUM_EDITED', 'EDITED_SERVICE_TOKEN'], user_credentials: [...shipped.user_credentials, ...added] } };
});

const { EnvDenylist, isStoredOnlyCredentialName } = await import('../../src/env/EnvDenylist.js');

describe('the seed names in an edited user_credentials list', () => {
  it('are never storable, under either preset, while another edited-in name is', () => {
    // The edit reached the module: a name of the host's own that the edit added is storable.
    expect(isStoredOnlyCredentialName('EDITED_SERVICE_TOKEN')).toBe(true);
    for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'GUM_EDITED', '_GUM_EDITED']) {
      expect(isStoredOnlyCredentialName(name)).toBe(false);
      for (const preset of ['gum', 'neutral'] as const) {
        const denylist = new EnvDenylist({ preset });
        expect(denylist.isUserCredentialName(name)).toBe(false);
        expect(denylist.ruleIn('needs_user_creds', name)).toBeDefined();
      }
    }
  });
});
