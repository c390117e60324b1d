import type { LookupAddress } from 'node:dns';
import type { RequestOptions } from 'node:https';
import { describe, expect, it } from 'vitest';
import {
  checkTargetUrl,
  pinnedLookup,
  refusedRange,
  type ResolvedAddress,
} from '../../../actors/events/notifications/url-guard.ts';

/** The SSRF rules for notification targets, with an injected resolver (the unit tier has no DNS). */

const strict = { allowHttp: false, allowPrivate: false };
const resolvesTo =
  (...addresses: string[]) =>
  async (): Promise<ResolvedAddress[]> =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
const noDns = async (): Promise<ResolvedAddress[]> => {
  throw new Error('no DNS expected for an IP literal');
};

describe('checkTargetUrl', () => {
  it('accepts an https URL resolving to public addresses and returns them', async () => {
    const r = await checkTargetUrl(
      'https://hooks.example.com/x?y=1',
      strict,
      resolvesTo('93.184.216.34', '2606:2800:220:1::1'),
    );
    expect(r).toMatchObject({ ok: true, addresses: [{ address: '93.184.216.34', family: 4 }, { family: 6 }] });
    if (r.ok) expect(r.url.hostname).toBe('hooks.example.com');
  });

  it.each([
    ['10.0.0.5', 'a private'],
    ['172.16.0.1', 'a private'],
    ['172.31.255.255', 'a private'],
    ['192.168.1.1', 'a private'],
    ['127.0.0.1', 'a loopback'],
    ['127.8.9.10', 'a loopback'],
    ['0.0.0.0', 'an unspecified'],
    ['169.254.169.254', 'a link-local'],
    ['100.64.0.1', 'a shared (CGNAT)'],
    ['100.127.255.254', 'a shared (CGNAT)'],
    ['224.0.0.251', 'a multicast'],
    ['239.255.255.250', 'a multicast'],
    ['255.255.255.255', 'a broadcast'],
    ['::1', 'a loopback'],
    ['::', 'an unspecified'],
    ['fe80::1', 'a link-local'],
    ['febf::1', 'a link-local'],
    ['fc00::1', 'a private'],
    ['fd12:3456::1', 'a private'],
    ['ff02::1', 'a multicast'],
    ['::ffff:10.0.0.5', 'a private'],
    ['::ffff:127.0.0.1', 'a loopback'],
    ['::ffff:a9fe:a9fe', 'a link-local'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'a private'],
    ['192.0.0.8', 'a reserved'],
    ['198.19.0.1', 'a reserved'],
    ['240.0.0.1', 'a reserved'],
    ['64:ff9b::a00:5', 'a translated (NAT64)'],
  ])('refuses a host resolving to %s (%s)', async (address, kind) => {
    const r = await checkTargetUrl('https://hooks.example.com/', strict, resolvesTo('93.184.216.34', address));
    expect(r).toEqual({ ok: false, reason: `the host resolves to ${kind} address (${address})` });
  });

  it('keeps the neighbours of the ranges', async () => {
    for (const a of [
      '172.15.255.255',
      '172.32.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '169.253.0.1',
      '11.0.0.1',
      'fe7f::1',
      'fec0::1',
      '::ffff:8.8.8.8',
      '2001:db9::1',
    ])
      expect(refusedRange(a, a.includes(':') ? 6 : 4), a).toBeNull();
    expect((await checkTargetUrl('https://h.example/', strict, resolvesTo('8.8.8.8'))).ok).toBe(true);
  });

  it('checks IP literals without DNS', async () => {
    expect(await checkTargetUrl('https://10.1.2.3:8443/hook', strict, noDns)).toEqual({
      ok: false,
      reason: 'the host is a private address (10.1.2.3)',
    });
    expect(await checkTargetUrl('https://[::1]/hook', strict, noDns)).toEqual({
      ok: false,
      reason: 'the host is a loopback address (::1)',
    });
    expect(await checkTargetUrl('https://[::ffff:169.254.169.254]/', strict, noDns)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('a link-local address'),
    });
    // The URL parser turns decimal and short forms into dotted quads.
    expect(await checkTargetUrl('https://2130706433/', strict, noDns)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('loopback'),
    });
    expect(await checkTargetUrl('https://127.1/', strict, noDns)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('loopback'),
    });
    expect(await checkTargetUrl('https://1.1.1.1/', strict, noDns)).toMatchObject({
      ok: true,
      addresses: [{ address: '1.1.1.1', family: 4 }],
    });
  });

  it('requires https unless allowHttp, and refuses other schemes always', async () => {
    const dns = resolvesTo('93.184.216.34');
    expect(await checkTargetUrl('http://hooks.example.com/', strict, dns)).toEqual({
      ok: false,
      reason: 'the URL must use https',
    });
    expect((await checkTargetUrl('http://hooks.example.com/', { ...strict, allowHttp: true }, dns)).ok).toBe(true);
    expect(await checkTargetUrl('ftp://hooks.example.com/', { ...strict, allowHttp: true }, dns)).toMatchObject({
      ok: false,
    });
    expect(await checkTargetUrl('file:///etc/passwd', { ...strict, allowHttp: true }, dns)).toMatchObject({
      ok: false,
    });
    expect(await checkTargetUrl('not a url', strict, dns)).toEqual({ ok: false, reason: 'the URL is not valid' });
  });

  it('refuses credentials in the URL', async () => {
    const dns = resolvesTo('93.184.216.34');
    const reason = 'the URL must not contain a user name or password';
    expect(await checkTargetUrl('https://user:pass@hooks.example.com/', strict, dns)).toEqual({ ok: false, reason });
    expect(await checkTargetUrl('https://token@hooks.example.com/', strict, dns)).toEqual({ ok: false, reason });
  });

  it('allowPrivate lets private addresses through (still https, still no credentials)', async () => {
    const lan = { allowHttp: false, allowPrivate: true };
    expect(await checkTargetUrl('https://chat.lan/', lan, resolvesTo('192.168.1.10'))).toMatchObject({ ok: true });
    expect(await checkTargetUrl('https://[::1]/', lan, noDns)).toMatchObject({ ok: true });
    expect((await checkTargetUrl('http://chat.lan/', lan, resolvesTo('192.168.1.10'))).ok).toBe(false);
  });

  it('reports a host that does not resolve', async () => {
    const failing = async (): Promise<ResolvedAddress[]> => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    expect(await checkTargetUrl('https://nowhere.invalid/', strict, failing)).toEqual({
      ok: false,
      reason: 'the host nowhere.invalid could not be resolved (ENOTFOUND)',
    });
    expect(await checkTargetUrl('https://empty.example/', strict, resolvesTo())).toMatchObject({ ok: false });
  });
});

describe('pinnedLookup', () => {
  const addresses: ResolvedAddress[] = [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:2800:220:1::1', family: 6 },
  ];
  const call = (options: { all?: boolean; family?: number }) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((done) =>
      pinnedLookup(addresses)('rebound.example.com', options, (error, address, family) =>
        done({ error, address, family }),
      ),
    );

  it('answers only the checked addresses, whatever the host name', async () => {
    expect(await call({})).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    expect(await call({ family: 6 })).toEqual({ error: null, address: '2606:2800:220:1::1', family: 6 });
    expect(await call({ all: true })).toEqual({ error: null, address: addresses, family: undefined });
  });

  it('fits the lookup option of https.request', () => {
    const options: RequestOptions = { host: 'rebound.example.com', lookup: pinnedLookup(addresses) };
    expect(typeof options.lookup).toBe('function');
  });

  it('fails when no checked address has the requested family', async () => {
    const only4 = await new Promise<NodeJS.ErrnoException | null>((done) =>
      pinnedLookup([{ address: '93.184.216.34', family: 4 }])('h', { family: 6 }, (error) => done(error)),
    );
    expect(only4?.code).toBe('ENOTFOUND');
  });
});
