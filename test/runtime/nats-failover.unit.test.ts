import type { Server } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { convergingLeastRecentlyDialed, failoverOptions, leastRecentlyDialed } from '../../platform/nats-failover.ts';

const server = (port: number, lastConnect: number): Server => ({
  hostname: '127.0.0.1',
  port,
  listen: `127.0.0.1:${port}`,
  src: `nats://127.0.0.1:${port}`,
  tlsName: '',
  reconnects: 0,
  lastConnect,
  gossiped: false,
  didConnect: lastConnect > 0,
});

describe('the next node a NATS client dials', () => {
  it('is the one dialled longest ago, so the node just lost comes last', () => {
    // The pool as nats.js hands it over: the node it would pick (the one just lost) first.
    const lost = server(4001, 5_000);
    const pool = [lost, server(4002, 0), server(4003, 0)];
    expect(leastRecentlyDialed(pool)?.port).toBe(4002);
    expect(convergingLeastRecentlyDialed(pool)?.port).toBe(4002);
    // Both others tried since, and failed: the lost one again, before the one tried last.
    const later = [server(4001, 5_000), server(4002, 6_000), server(4003, 7_000)];
    expect(leastRecentlyDialed(later)?.port).toBe(4001);
  });

  it('keeps the pool order on a tie for agents, and takes the lowest address for services', () => {
    const pool = [server(4003, 0), server(4001, 0), server(4002, 0)];
    expect(leastRecentlyDialed(pool)?.port).toBe(4003);
    expect(convergingLeastRecentlyDialed(pool)?.port).toBe(4001);
    // Every service connection converges, whatever order its own pool was shuffled into.
    expect(convergingLeastRecentlyDialed([...pool].reverse())?.port).toBe(4001);
  });

  it('is null for an empty pool (nats.js then picks itself)', () => {
    expect(leastRecentlyDialed([])).toBeNull();
    expect(convergingLeastRecentlyDialed([])).toBeNull();
  });

  it('comes with two outstanding pings, a 2 s dial timeout and the chosen picker', () => {
    expect(failoverOptions(1_000, convergingLeastRecentlyDialed)).toEqual({
      pingInterval: 1_000,
      maxPingOut: 2,
      timeout: 2_000,
      reconnectToServer: convergingLeastRecentlyDialed,
    });
    expect(failoverOptions(1_500).reconnectToServer).toBe(leastRecentlyDialed);
  });
});
