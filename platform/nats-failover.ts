import type { ConnectionOptions, Server } from '@nats-io/transport-node';

/**
 * How a NATS client leaves a broker node that died or went silent, and which node it tries next. Shared by the
 * services (platform/nats.ts) and the agent (agent/connection.ts); docs/operations.md lists each setting with its
 * trade-off.
 *
 * - A silent server (frozen process, stalled disk, half-open network: no FIN, so no socket error) is noticed by the
 *   client's pings only. nats.js counts a server stale when `maxPingOut` pings are unanswered at the next ping, so
 *   it is left between `pingInterval × maxPingOut` and `pingInterval × (maxPingOut + 1)` after it went quiet.
 *   Two outstanding pings, not one: after the process itself stalled (a long synchronous task) the ping timer runs
 *   before the socket is read, so a single outstanding ping would call a healthy server silent.
 * - A dial gives up after `timeout`: a frozen node still accepts TCP connections (the kernel does), but never sends
 *   its INFO, and nats.js's default would wait 20 s on it.
 * - The next node is the one dialled longest ago (leastRecentlyDialed): nats.js's own rotation dials the node just
 *   lost first.
 */
export function failoverOptions(
  pingIntervalMs: number,
  pick: (pool: ReadonlyArray<Server>) => Server | null = leastRecentlyDialed,
): Partial<ConnectionOptions> {
  return {
    pingInterval: pingIntervalMs,
    maxPingOut: 2,
    timeout: 2_000,
    reconnectToServer: pick,
  };
}

/**
 * Services ping every second: a silent node is left in 2-3 s, and the few service connections cost the broker a
 * PING/PONG each a second, nothing.
 */
export const SERVICE_PING_INTERVAL_MS = 1_000;

/**
 * Agents ping every 1.5 s: a silent node is left in 3-4.5 s, well within two heartbeat intervals (the default is 10
 * s). The price is a PING/PONG per agent every 1.5 s: about 7,000 small frames a second for 10,000 agents.
 */
export const AGENT_PING_INTERVAL_MS = 1_500;

/**
 * Dials the server of the pool that was dialled longest ago (never dialled first): after a loss, every other node is
 * tried before the lost one again, and a reconnect moves to a healthy node at once instead of waiting on the dead one.
 * Ties keep the pool's order, which nats.js shuffles: agents spread over the nodes.
 */
export function leastRecentlyDialed(pool: ReadonlyArray<Server>): Server | null {
  let best: Server | null = null;
  for (const s of pool) if (!best || s.lastConnect < best.lastConnect) best = s;
  return best;
}

/**
 * The same, with ties broken by address, so that every service connection (a process has more than one, and a split
 * deployment more processes) takes the same node first and moves to the same node after a loss. A requester and the
 * queue subscribers it calls then share a node, and the server delivers to a local subscriber before a remote one.
 * That matters when a node freezes: its routes stay up on nats-server 2.9 (under traffic its route pings are held
 * off), so the other nodes still count the frozen node's stale subscribers as members of every queue group, and a
 * request with no local member could be handed to one of them and go unanswered.
 */
export function convergingLeastRecentlyDialed(pool: ReadonlyArray<Server>): Server | null {
  let best: Server | null = null;
  for (const s of pool)
    if (!best || s.lastConnect < best.lastConnect || (s.lastConnect === best.lastConnect && s.listen < best.listen))
      best = s;
  return best;
}
