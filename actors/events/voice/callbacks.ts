import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { gatherHandlers } from './callbacks/gather.ts';
import { statusHandlers } from './callbacks/status.ts';
import { twimlHandlers } from './callbacks/twiml.ts';

/**
 * The voice provider's callbacks (`POST /api/v1/twilio/voice/twiml/{callID}`, `…/voice/gather`, `…/voice/status`):
 * every one is checked against `X-Twilio-Signature` over the public URL it was sent to (SVC_BACKEND_URL + path and
 * query) and its form parameters, before anything is read or written; a bad signature is 403. A signed callback is
 * then matched to the call it names: its `CallSid` and `AccountSid` must be the ones of the call we placed (the
 * provider identifies a call by them, not by our URL), else 403 and nothing changes. Each callback is in callbacks/,
 * in a file named after it; callbacks/call.ts holds these checks.
 */
export function voiceHandlers(deps: EventsDeps): EventsHandlers {
  return { ...twimlHandlers(deps), ...gatherHandlers(deps), ...statusHandlers(deps) };
}
