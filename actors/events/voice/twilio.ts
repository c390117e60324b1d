import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../../platform/config.ts';

/**
 * The voice provider: Twilio's REST API (`POST /2010-04-01/Accounts/{AccountSid}/Calls.json`, form-encoded, HTTP
 * basic auth with the account SID and auth token) and its request signature (`X-Twilio-Signature`: base64 of the
 * HMAC-SHA1, under the auth token, of the full callback URL followed by every POST parameter, sorted by name, as name
 * then value). SVC_TWILIO_API_URL points at the API (a local peer in tests).
 */

export interface VoiceConfig {
  accountSid: string;
  authToken: string;
  from: string;
  apiUrl: string;
  /** Public base URL of this service, where the provider sends its callbacks (SVC_BACKEND_URL). */
  publicUrl: string;
}

export function voiceConfigured(config: Config): boolean {
  return (
    config.SVC_TWILIO_ACCOUNT_SID !== undefined &&
    config.SVC_TWILIO_AUTH_TOKEN !== undefined &&
    config.SVC_TWILIO_FROM !== undefined
  );
}

export function voiceConfig(config: Config): VoiceConfig | undefined {
  if (!voiceConfigured(config)) return undefined;
  return {
    accountSid: config.SVC_TWILIO_ACCOUNT_SID!,
    authToken: config.SVC_TWILIO_AUTH_TOKEN!,
    from: config.SVC_TWILIO_FROM!,
    apiUrl: config.SVC_TWILIO_API_URL.replace(/\/+$/, ''),
    publicUrl: config.SVC_BACKEND_URL.replace(/\/+$/, ''),
  };
}

/** The provider's signature of a callback: HMAC-SHA1 over the URL and the sorted parameters, base64. */
export function twilioSignature(
  authToken: string,
  url: string,
  params: readonly (readonly [string, string])[],
): string {
  const sorted = [...params].sort(([ak, av], [bk, bv]) =>
    ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0,
  );
  const data = url + sorted.map(([k, v]) => k + v).join('');
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Constant-time check of a callback's `X-Twilio-Signature`. */
export function validTwilioSignature(
  authToken: string,
  url: string,
  params: readonly (readonly [string, string])[],
  given: string,
): boolean {
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const got = Buffer.from(given);
  // Compared over the expected length whatever was given, so a wrong length costs the same as a wrong value.
  const padded = Buffer.alloc(expected.length);
  got.copy(padded, 0, 0, Math.min(got.length, expected.length));
  return timingSafeEqual(padded, expected) && got.length === expected.length;
}

export class VoiceProviderError extends Error {
  readonly status: number;
  readonly retryAfterMs?: number;
  constructor(
    message: string,
    /** 0 when the provider could not be reached. */
    status: number,
    retryAfterMs?: number,
  ) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
    this.name = 'VoiceProviderError';
  }
  /** Worth trying again: unreachable, rate limited, or the provider's own failure. */
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

/** Places one outbound call that fetches its TwiML from `twimlUrl` and reports its outcome to `statusUrl`. */
export async function placeCall(
  v: VoiceConfig,
  to: string,
  twimlUrl: string,
  statusUrl: string,
  timeoutMs = 10_000,
): Promise<{ sid: string; status: string }> {
  const form = new URLSearchParams({
    To: to,
    From: v.from,
    Url: twimlUrl,
    Method: 'POST',
    StatusCallback: statusUrl,
    StatusCallbackMethod: 'POST',
    Timeout: '30',
  });
  let res: Response;
  try {
    res = await fetch(`${v.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(v.accountSid)}/Calls.json`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${v.accountSid}:${v.authToken}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new VoiceProviderError(`voice provider unreachable: ${err instanceof Error ? err.message : String(err)}`, 0);
  }
  const text = await res.text();
  if (!res.ok) {
    const retryAfter = Number(res.headers.get('retry-after'));
    let detail = text.slice(0, 200);
    try {
      const body = JSON.parse(text) as { message?: unknown; code?: unknown };
      if (typeof body.message === 'string')
        detail = `${body.message}${body.code !== undefined ? ` (code ${String(body.code)})` : ''}`;
    } catch {
      // not JSON: the raw start of the body
    }
    throw new VoiceProviderError(
      `voice provider answered ${res.status}: ${detail}`,
      res.status,
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
    );
  }
  let body: { sid?: unknown; status?: unknown };
  try {
    body = JSON.parse(text) as { sid?: unknown; status?: unknown };
  } catch {
    throw new VoiceProviderError('voice provider answered a body that is not JSON', res.status);
  }
  if (typeof body.sid !== 'string' || body.sid.length === 0)
    throw new VoiceProviderError('voice provider answered without a call sid', res.status);
  return { sid: body.sid, status: typeof body.status === 'string' ? body.status : 'queued' };
}

export const callbackUrls = (v: VoiceConfig, callId: string): { twiml: string; gather: string; status: string } => ({
  twiml: `${v.publicUrl}/api/v1/twilio/voice/twiml/${callId}`,
  gather: `${v.publicUrl}/api/v1/twilio/voice/gather?call=${callId}`,
  status: `${v.publicUrl}/api/v1/twilio/voice/status?call=${callId}`,
});
