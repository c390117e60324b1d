import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets kept at rest (TOTP secrets, webhook shared secrets): `v1.<iv>.<tag>.<ciphertext>` in
 * base64url. `keyName` is the configuration variable the key came from, named in the error when it is malformed.
 */
export class SecretBox {
  private readonly key: Buffer;
  constructor(hexKey: string, keyName = 'SVC_MFA_ENCRYPTION_KEY') {
    this.key = Buffer.from(hexKey, 'hex');
    if (this.key.length !== 32) throw new Error(`${keyName} must be 32 bytes of hex`);
  }

  /**
   * A box whose key is derived (HKDF-SHA256) from another domain's key for one `purpose`: the two never share a key,
   * and no extra secret has to be provisioned.
   */
  static derived(hexKey: string, purpose: string, keyName: string): SecretBox {
    const base = Buffer.from(hexKey, 'hex');
    if (base.length !== 32) throw new Error(`${keyName} must be 32 bytes of hex`);
    const key = Buffer.from(hkdfSync('sha256', base, Buffer.alloc(0), `svc:${purpose}`, 32));
    return new SecretBox(key.toString('hex'), keyName);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
      '.',
    );
  }

  open(sealed: string): string {
    const [v, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || !ct) throw new Error('unknown secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Tokens are high-entropy, so a fast hash is enough to store them (nothing to brute-force). */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
