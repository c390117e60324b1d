import { createLogger, type Logger } from '../platform/logger.ts';
import { AgentCredentials } from './connection.ts';
import { readAgentState, readBrokerCa, type AgentState } from './state.ts';

/** An enrolled agent's state directory, read once at start: who it is, how it authenticates, which CA it trusts. */
export interface StateDir {
  /** The directory itself (the saved watch config is read and written there later). */
  readonly path: string;
  /** agent.json. */
  readonly state: AgentState;
  /** agent.creds (renewed in place by the agent). */
  readonly credentials: AgentCredentials;
  /** broker-ca.pem; undefined when enrolment brought none. */
  readonly ca: string | undefined;
  /** The agent's logger, every line naming its agent_id. */
  readonly log: Logger;
}

/** Reads the state directory; throws NotEnrolledError when the agent was never enrolled there. */
export async function openStateDir(path: string, log?: Logger): Promise<StateDir> {
  const state = await readAgentState(path);
  const agentLog = (log ?? createLogger(undefined, 'agent')).child({ agent_id: state.agent_id });
  const credentials = await AgentCredentials.load(path, agentLog);
  const ca = await readBrokerCa(path);
  return { path, state, credentials, ca, log: agentLog };
}
