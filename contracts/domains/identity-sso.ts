import { z } from 'zod';
import { subjects } from '../subject.ts';
import { TokenResponse } from './identity-auth.ts';

/** Where the browser goes next, and whether the binding cookie must carry `Secure` (backend URL is https). */
const Redirect = z.object({
  redirect_url: z.string(),
  secure_cookie: z.boolean(),
});

/** The parameters a provider appends to the redirect URI (RFC 6749 §4.1.2, RFC 9207 `iss`); all optional. */
export const SsoCallbackParams = z.object({
  code: z.string().min(1).max(4096).optional(),
  state: z.string().min(1).max(512).optional(),
  iss: z.string().max(2048).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(2048).optional(),
  error_uri: z.string().max(2048).optional(),
});

export const identitySsoSubjects = subjects({
  'svc.identity.sso.config': {
    retry: 'safe',
    summary: 'Public sign-in configuration: whether single sign-on is enabled (an SSO client id is configured).',
    request: z.object({}),
    reply: z.object({ sso_enabled: z.boolean() }),
    errors: [],
  },
  'svc.identity.sso.start': {
    summary:
      'Starts a single sign-on flow: stores state, nonce and PKCE verifier single-use for 5 minutes and answers the provider authorization URL plus the browser-binding secret to set as a cookie.',
    request: z.object({}),
    reply: Redirect.extend({
      /** Value of the browser-binding cookie; null when the flow could not start (the redirect then carries an error). */
      binding: z.string().nullable(),
      binding_max_age_seconds: z.number().int().positive(),
    }),
    errors: [],
  },
  'svc.identity.sso.callback': {
    summary:
      'Completes a single sign-on flow from the provider redirect: validates state and browser binding, exchanges the code, verifies the ID token, finds, links or provisions the user and answers the frontend redirect (one-time code, MFA challenge or error code).',
    request: SsoCallbackParams.extend({
      /** The browser-binding cookie sent with the callback request, when present. */
      binding: z.string().max(256).optional(),
    }),
    reply: Redirect,
    errors: [],
  },
  'svc.identity.sso.exchange': {
    summary: 'Redeems a single sign-on one-time code (single use, 5 minutes) for the token response.',
    request: z.object({ code: z.string().min(1).max(256) }),
    reply: TokenResponse,
    errors: ['unauthorized'],
  },
});
