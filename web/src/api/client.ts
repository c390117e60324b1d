import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './console.ts';
import { session } from '../auth/session.ts';

/** The console API's error envelope (docs/api/conventions.md). */
export interface ApiErrorBody {
  error: { code: string; message: string; request_id: string };
}

/** A failed call, as the API worded it: shown with its request id so a report can be traced. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  constructor(status: number, body: unknown) {
    const e = (body as Partial<ApiErrorBody> | undefined)?.error;
    super(e?.message ?? `the service answered ${status}`);
    this.status = status;
    this.code = e?.code ?? 'UNKNOWN';
    this.requestId = e?.request_id;
  }
}

/** The access token on every call, refreshed first when it is about to expire. */
const bearer: Middleware = {
  async onRequest({ request }) {
    if (request.headers.has('authorization') || new URL(request.url).pathname.startsWith('/api/v1/auth/browser/'))
      return request;
    const token = await session.accessToken();
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });
api.use(bearer);

/** The data of a call, or its error thrown as an ApiError (for TanStack Query, which expects a throw). */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw new ApiError(response.status, error);
  return data as T;
}
