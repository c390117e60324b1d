import { ApiError } from '../api/client.ts';

/** One part of an API message that names a field: `body.url: the URL must use https` → `url`. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** A form's view of a failed call: the messages of its own fields, and the rest for the notice above the form. */
export interface FieldErrors {
  /** The message for exactly this field (`steps.0.after_minutes`), if the API named it. */
  of(field: string): string | undefined;
  /** Every message for this field or one inside it (`steps`, `steps.1.channel_ids`…). */
  under(field: string): FieldProblem[];
  /** The messages for this field and inside it as one text, for one input that stands for a list (`addresses`). */
  joined(field: string): string | undefined;
  /** What no field of the form shows, for an `ErrorNotice`: keeps the code and request id. */
  rest: unknown;
}

const PART = /^(?:body\.)?([A-Za-z_][\w.]*): ([\s\S]*)$/;
// Validation joins its parts with "; " (docs/api/conventions.md); a part's own text may hold a ";" (an RRULE).
const SPLIT = /; (?=(?:body\.)?[A-Za-z_][\w.]*: )/;

/**
 * Splits an API error into the fields of a form (`fields`: the body fields it has inputs for, a nested one under its
 * top-level name). When every part found its field, a short notice still says so, with the request id.
 */
export function fieldErrors(error: unknown, fields: readonly string[]): FieldErrors {
  const problems: FieldProblem[] = [];
  if (!(error instanceof ApiError))
    return { of: () => undefined, under: () => [], joined: () => undefined, rest: error };
  const rest: string[] = [];
  for (const part of error.message.split(SPLIT)) {
    const m = PART.exec(part);
    const field = m?.[1];
    if (m && field && fields.some((f) => field === f || field.startsWith(`${f}.`)))
      problems.push({ field, message: m[2]! });
    else rest.push(part);
  }
  const message = rest.length > 0 ? rest.join('; ') : 'Check the fields marked below.';
  const under = (field: string): FieldProblem[] =>
    problems.filter((p) => p.field === field || p.field.startsWith(`${field}.`));
  return {
    of: (field) => problems.find((p) => p.field === field)?.message,
    under,
    joined: (field) =>
      under(field)
        .map((p) => (p.field === field ? p.message : `${p.field.slice(field.length + 1)}: ${p.message}`))
        .join('; ') || undefined,
    rest:
      problems.length === 0
        ? error
        : new ApiError(error.status, { error: { code: error.code, message, request_id: error.requestId ?? '' } }),
  };
}
