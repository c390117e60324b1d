import type { Invoice } from '../../../contracts/domains/invoice.ts';
import { parseRetryAfter } from './retry.ts';

/** Where and how to push: SVC_ACCOUNTING_URL and SVC_ACCOUNTING_TOKEN. */
export interface AccountingTarget {
  url: string;
  token: string;
  timeoutMs: number;
}

/**
 * What one push gave: the accounting system's id, or a failure that is `transient` (network, timeout, 408, 429,
 * 5xx: try again, after `retryAfterMs` when the peer said so) or `permanent` (any other answer: the same request
 * would be refused again).
 */
export type PushResult =
  | { ok: true; externalId: string; status: number }
  | { ok: false; transient: boolean; status: number | null; retryAfterMs: number | undefined; error: string };

/** The JSON body: the invoice's billing fields and its lines (presentation-only fields such as html_override stay out). */
export function pushBody(inv: Invoice, previousExternalId: string | null): Record<string, unknown> {
  return {
    id: inv.id,
    display_number: inv.display_number,
    version: inv.version,
    status: inv.status,
    application_key: inv.application_key,
    customer_key: inv.customer_key,
    period_start: inv.period_start,
    period_end: inv.period_end,
    invoice_date: inv.invoice_date,
    deal_type: inv.deal_type,
    currency: inv.currency,
    base_amount: inv.base_amount,
    overtime_hours: inv.overtime_hours,
    overtime_amount: inv.overtime_amount,
    total_amount: inv.total_amount,
    total_hours: inv.total_hours,
    is_overtime: inv.is_overtime,
    legal_text: inv.legal_text,
    // A later version of an invoice already pushed: lets the accounting system link or replace its record.
    previous_external_id: previousExternalId,
    line_items: inv.line_items.map((l) => ({
      id: l.id,
      line_type: l.line_type,
      description: l.description,
      tracker_key: l.tracker_key,
      quantity: l.quantity,
      unit_price: l.unit_price,
      line_total: l.line_total,
      rate_tier: l.rate_tier,
      rate_multiplier: l.rate_multiplier,
      sort_order: l.sort_order,
    })),
  };
}

const idOf = (body: unknown): string | undefined => {
  if (typeof body !== 'object' || body === null || !('id' in body)) return undefined;
  const id = (body as { id: unknown }).id;
  if (typeof id === 'string' && id.length > 0 && id.length <= 200) return id;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  return undefined;
};

/** `POST {url}/invoices` with the bearer token and `Idempotency-Key: <invoice id>:<version>`. Never throws. */
export async function pushInvoice(
  target: AccountingTarget,
  body: Record<string, unknown>,
  idempotencyKey: string,
  now: () => number,
): Promise<PushResult> {
  let res: Response;
  try {
    res = await fetch(`${target.url.replace(/\/+$/, '')}/invoices`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${target.token}`,
        'content-type': 'application/json',
        accept: 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify(body),
      // A redirect would turn the POST into a GET (or resend the token elsewhere): treated as a wrong URL instead.
      redirect: 'manual',
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (err) {
    const cause =
      err instanceof Error
        ? err.cause instanceof Error
          ? `${err.message}: ${err.cause.message}`
          : err.message
        : String(err);
    return {
      ok: false,
      transient: true,
      status: null,
      retryAfterMs: undefined,
      error: `accounting system unreachable: ${cause}`,
    };
  }
  const text = await res.text().catch(() => '');
  if (res.status === 200 || res.status === 201) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const externalId = idOf(parsed);
    if (externalId !== undefined) return { ok: true, externalId, status: res.status };
    // It accepted something but did not say what: pushing again with the same key would give the same answer.
    return {
      ok: false,
      transient: false,
      status: res.status,
      retryAfterMs: undefined,
      error: `accounting system answered ${res.status} without an id`,
    };
  }
  const detail = text.replace(/\s+/g, ' ').trim().slice(0, 300);
  const transient = res.status === 408 || res.status === 429 || res.status >= 500;
  return {
    ok: false,
    transient,
    status: res.status,
    retryAfterMs: transient ? parseRetryAfter(res.headers.get('retry-after'), now()) : undefined,
    error: `accounting system answered ${res.status}${detail ? `: ${detail}` : ''}`,
  };
}
