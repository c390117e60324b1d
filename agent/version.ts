/** Reported in heartbeats and snapshots; bump with behaviour changes the server may need to tell apart. */
export const AGENT_VERSION = '0.1.0';
