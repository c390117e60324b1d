import argon2 from 'argon2';
import { DomainError } from '../../contracts/errors.ts';

/**
 * argon2id hashing with a cap on concurrent hashes: each costs 64 MiB, so a login storm must queue instead of
 * exhausting memory. Waiters beyond `maxQueue` are refused (the caller answers 503) rather than queued forever.
 */
export class PasswordHasher {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private dummy: Promise<string> | undefined;

  private readonly maxConcurrent: number;
  private readonly maxQueue: number;
  constructor(maxConcurrent = 4, maxQueue = 256) {
    this.maxConcurrent = maxConcurrent;
    this.maxQueue = maxQueue;
  }

  get stats(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.maxConcurrent) {
      if (this.waiting.length >= this.maxQueue)
        throw new DomainError('unavailable', 'too many sign-ins at once; retry shortly', { retry_after_seconds: 1 });
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  hash(password: string): Promise<string> {
    return this.slot(() => argon2.hash(password, { type: argon2.argon2id }));
  }

  verify(hash: string, password: string): Promise<boolean> {
    return this.slot(() => argon2.verify(hash, password).catch(() => false));
  }

  /**
   * The hash unknown e-mails are checked against. Made through the capped slot like every other hash, and once:
   * `warm()` at start-up, so even the first unknown e-mail costs exactly one verification, like a wrong password.
   */
  warm(): Promise<string> {
    this.dummy ??= this.hash('dummy-password-for-timing').catch((err: unknown) => {
      this.dummy = undefined;
      throw err;
    });
    return this.dummy;
  }

  /** Same work as a real check, for unknown e-mails, so both answers take the same time. */
  async verifyDummy(password: string): Promise<false> {
    await this.verify(await this.warm(), password);
    return false;
  }
}
