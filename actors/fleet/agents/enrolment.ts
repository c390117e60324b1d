import type { BrokerIssuer } from '../../../platform/broker/issuer.ts';
import type { EnrolmentDeps, EnrolmentHandlers } from './enrolment/deps.ts';
import { enrolCompleteHandlers } from './enrolment/enrol-complete.ts';
import { enrolStartHandlers } from './enrolment/enrol-start.ts';
import { installTokenCreateHandlers } from './enrolment/install-token-create.ts';
import { refuser } from './enrolment/refusal.ts';

export { agentIssuer, agentNatsCa, agentNatsServers } from './enrolment/broker-access.ts';
export { CHALLENGE_TTL_MS, verifiesChallenge } from './enrolment/challenge.ts';
export type { EnrolmentDeps } from './enrolment/deps.ts';

/**
 * The enrolment actor: an operator creates an install token (install-token-create.ts), an agent starts with it and
 * its public key (enrol-start.ts), then answers the challenge it got to receive its host and broker credentials
 * (enrol-complete.ts). Every refused step is audited (refusal.ts).
 */
export function enrolmentHandlers(deps: EnrolmentDeps, issuer: BrokerIssuer | undefined): EnrolmentHandlers {
  const refuse = refuser(deps.audit);
  return {
    ...installTokenCreateHandlers(deps),
    ...enrolStartHandlers(deps, refuse),
    ...enrolCompleteHandlers(deps, issuer, refuse),
  };
}
