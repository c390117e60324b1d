import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twilioSignature } from '../../actors/events/voice/twilio.ts';
import type { TestSystem } from '../support/system.ts';
import { PUBLIC_URL, startEventsSystem } from './support.ts';

/**
 * The voice callbacks with no voice provider configured: authentication comes first. No signature can be valid
 * without the auth token, so every caller gets the 403 of a bad signature, never an answer telling the deployment's
 * configuration.
 */

let sys: TestSystem;

beforeAll(async () => {
  ({ sys } = await startEventsSystem({ SVC_TWILIO_ACCOUNT_SID: '', SVC_TWILIO_AUTH_TOKEN: '', SVC_TWILIO_FROM: '' }));
});
afterAll(() => sys?.stop());

describe('voice callbacks without a voice provider', () => {
  it('answers 403 as for a bad signature on every callback, signed or not', async () => {
    const call = randomUUID();
    const params = {
      AccountSid: `AC${'0'.repeat(32)}`,
      CallSid: `CA${'1'.repeat(32)}`,
      CallStatus: 'completed',
      Digits: '1',
    };
    for (const path of [
      `/api/v1/twilio/voice/twiml/${call}`,
      `/api/v1/twilio/voice/gather?call=${call}`,
      `/api/v1/twilio/voice/status?call=${call}`,
    ]) {
      for (const signature of [
        '',
        twilioSignature('a-guessed-token', `${PUBLIC_URL}${path}`, Object.entries(params)),
      ]) {
        const res = await sys.http({
          method: 'POST',
          url: path,
          payload: new URLSearchParams(params).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        });
        expect(res.statusCode, `${path}: ${res.body}`).toBe(403);
        expect(res.json().error).toMatchObject({
          code: 'forbidden',
          message: 'X-Twilio-Signature does not match this request',
        });
      }
    }
  });
});
