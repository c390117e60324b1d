/** The reference agent as a library: tests and the benchmark run agents in-process with these. */
export { enrollAgent, EnrollError, type EnrollOptions, type EnrollResult } from './enroll.ts';
export { startAgent, type AgentStats, type RunningAgent, type StartAgentOptions } from './runner.ts';
export { enrollSimulated, runSimulated, simDir, type FleetSummary, type SimulatedFleet } from './simulate/fleet.ts';
export { createSyntheticCollector, createSyntheticWatcher } from './simulate/synthetic.ts';
export { readAgentState, readBrokerCa, statePaths, type AgentState } from './state.ts';
export { AGENT_VERSION } from './version.ts';
