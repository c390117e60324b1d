import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AccessTokens } from '../../actors/identity/crypto.ts';
import { DomainError } from '../../contracts/errors.ts';

/** AccessTokens keeps the tokens it verified (crypto.ts): the same answers as verifying afresh, fewer HMACs. */
describe('AccessTokens, verified tokens kept', () => {
  const secret = 'k'.repeat(48);
  const claims = { sub: randomUUID(), sid: randomUUID(), email: 'kept@example.com' };
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('keeps a verified token once, answers it again until its expiry, then refuses and drops it', async () => {
    let now = Date.UTC(2026, 10, 27, 12);
    const tokens = new AccessTokens(secret, 900, () => now);
    const token = await tokens.sign(claims);
    expect(await tokens.verify(token)).toEqual(claims);
    expect(tokens.kept).toBe(1);
    now += 899_999;
    expect(await tokens.verify(token)).toEqual(claims);
    expect(tokens.kept).toBe(1);
    now += 1;
    expect(await refusal(tokens.verify(token))).toMatchObject({ code: 'unauthorized', message: 'token expired' });
    expect(tokens.kept).toBe(0);
    // Verified afresh, jose refuses it the same way.
    expect(await refusal(tokens.verify(token))).toMatchObject({ code: 'unauthorized', message: 'token expired' });
  });

  it('keeps neither refused tokens nor another spelling of a valid signature, which is still verified each time', async () => {
    const tokens = new AccessTokens(secret, 900);
    const token = await tokens.sign(claims);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    expect(signature).toMatch(/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/);
    // The last character's two unused bits set: the same bytes once decoded.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelt = `${header}.${payload}.${signature.slice(0, -1)}${alphabet[alphabet.indexOf(signature.at(-1)!) + 1]}`;
    expect(await tokens.verify(respelt)).toEqual(claims);
    expect(tokens.kept).toBe(0);
    const other = new AccessTokens('o'.repeat(48), 900);
    const forged = await other.sign(claims);
    expect(await refusal(tokens.verify(forged))).toBeInstanceOf(DomainError);
    expect(await refusal(tokens.verify(`${header}.${payload}.`))).toBeInstanceOf(DomainError);
    expect(tokens.kept).toBe(0);
    await tokens.verify(token);
    expect(tokens.kept).toBe(1);
  });

  it('keeps at most maxKept tokens, dropping the oldest; a dropped one is verified afresh', async () => {
    const tokens = new AccessTokens(secret, 900, Date.now, 2);
    const three = await Promise.all([1, 2, 3].map((i) => tokens.sign({ ...claims, email: `kept-${i}@example.com` })));
    for (const t of three) await tokens.verify(t);
    expect(tokens.kept).toBe(2);
    // The first went: verifying it again keeps it anew, in place of the second.
    expect((await tokens.verify(three[0]!)).email).toBe('kept-1@example.com');
    expect(tokens.kept).toBe(2);
  });
});
