import { VERSION } from '../contracts/version.ts';

/** Reported in heartbeats, snapshots and `--version`: the project's release (package.json), never a second number. */
export const AGENT_VERSION = VERSION;

/** How an operator runs this agent: the installed executable, or the npm script in a checkout. */
export const AGENT_COMMAND: string =
  process.argv[1] !== undefined && /\.ts$/.test(process.argv[1]) ? 'npm run agent --' : 'svc-agent';
