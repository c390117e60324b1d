import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { KvStore } from '../../platform/stores/kv.ts';
import type { AccessTokens, SecretBox } from './crypto.ts';
import type { PasswordHasher } from './passwords.ts';

import type { Clock } from '../../platform/clock.ts';
import type { AccessResolver } from './access.ts';
import type { AuditRecorder } from './audit.ts';

/** Everything the identity actors share. Built once per process by actors/identity/index.ts. */
export interface IdentityDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
  kv: KvStore;
  nc: NatsConnection;
  clock: Clock;
  hasher: PasswordHasher;
  tokens: AccessTokens;
  box: SecretBox;
  access: AccessResolver;
  audit: AuditRecorder;
}
