import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkPasswordPolicy, isCommonPassword, MIN_PASSWORD_LENGTH } from '../../actors/identity/password-policy.ts';

/** The blocklist must bite at the policy's own minimum length: every entry is a password the length rule lets through. */
describe('common-password blocklist', () => {
  const entries = readFileSync(new URL('../../actors/identity/blocklist/common-passwords.txt', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l !== '');

  it('holds 10,000 distinct (case-insensitively) entries, each at least the minimum length', () => {
    expect(entries).toHaveLength(10_000);
    expect(new Set(entries.map((e) => e.toLowerCase())).size).toBe(10_000);
    expect(entries.filter((e) => [...e].length < MIN_PASSWORD_LENGTH)).toEqual([]);
    expect(entries.filter((e) => e !== e.trim())).toEqual([]);
  });

  it('blocks common 12+ character passwords in any letter case', () => {
    for (const pw of [
      'password1234',
      'qwertyuiop123',
      'PASSWORD1234',
      'QwertyUiop123',
      'qwerty123456',
      '1qaz2wsx3edc',
    ]) {
      expect(isCommonPassword(pw), pw).toBe(true);
      expect(() => checkPasswordPolicy(pw), pw).toThrow(/most common passwords/);
    }
  });

  it('lets an uncommon passphrase through', () => {
    expect(isCommonPassword('a brand new passphrase 42')).toBe(false);
    expect(() => checkPasswordPolicy('a brand new passphrase 42')).not.toThrow();
  });
});
