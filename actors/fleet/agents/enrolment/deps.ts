import type { MikroORM } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../../contracts/catalogue.ts';
import type { AuditRecorder } from '../../../../platform/audit.ts';
import type { Clock } from '../../../../platform/clock.ts';
import type { Config } from '../../../../platform/config.ts';
import type { Handlers } from '../../../../platform/serve.ts';

export interface EnrolmentDeps {
  orm: MikroORM;
  audit: AuditRecorder;
  clock: Clock;
  config: Config;
}

/** The handler table type of the enrolment actor; each file of this folder fills in its own subjects. */
export type EnrolmentHandlers = Handlers<SystemCatalogue, 'fleet'>;
