/** Reported in heartbeats and snapshots; bump with behaviour changes the server may need to tell apart. */
export const AGENT_VERSION = '0.1.0';

/** How an operator runs this agent: the installed executable, or the npm script in a checkout. */
export const AGENT_COMMAND: string = process.argv[1] !== undefined && /\.ts$/.test(process.argv[1]) ? 'npm run agent --' : 'svc-agent';
