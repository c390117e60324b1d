import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogue } from '../../contracts/catalogue.ts';
import { durableSubjects, type DurableSubject } from '../../contracts/streams.ts';
import type { SubjectSpec } from '../../contracts/subject.ts';

/**
 * The schemas along one request's path must agree: what a subject's request schema accepts (at the gateway), the actor
 * accepts again after the gateway's transforms, and the durable payloads the handler builds from it accept too. A
 * disagreement is a 500 after a value passed validation (`{"email":" "}` on forgot-password).
 */

/** Edge values fuzzing found trouble with, and their neighbours. */
const SAMPLES: readonly unknown[] = [
  undefined,
  null,
  '',
  ' ',
  '\t\n ',
  '  x  ',
  'a\u0000b',
  'x'.repeat(254),
  'x'.repeat(320),
  'x'.repeat(321),
  'x'.repeat(10_000),
  // Lower-casing makes this longer (İ → i̇): a length check before a transform is not a check after it.
  'İ'.repeat(200),
  '😀'.repeat(200),
  'user@example.com',
  ' User@Example.COM ',
  'a@b.co',
  'ab',
  '0',
  0,
  -1,
  1.5,
  true,
  [],
  {},
];

/** The object shape of a request or payload schema, when it has one (intersections contribute both sides). */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, z.ZodType>;
  if (schema instanceof z.ZodIntersection) {
    const left = shapeOf(schema.def.left as z.ZodType);
    const right = shapeOf(schema.def.right as z.ZodType);
    return left || right ? { ...left, ...right } : undefined;
  }
  if (schema instanceof z.ZodPipe) return shapeOf(schema.def.in as z.ZodType);
  return undefined;
}

const show = (v: unknown): string =>
  typeof v === 'string' && v.length > 40
    ? `${JSON.stringify(v.slice(0, 12))}… (${v.length} chars)`
    : (JSON.stringify(v) ?? 'undefined');

const entries = Object.entries(catalogue) as [string, SubjectSpec][];

describe('schema agreement over the catalogue', () => {
  it('declares produced payloads that exist, from fields that exist', () => {
    for (const [subject, spec] of entries) {
      for (const [durable, fields] of Object.entries(spec.produces ?? {})) {
        expect(Object.hasOwn(durableSubjects, durable), `${subject} produces unknown ${durable}`).toBe(true);
        const req = shapeOf(spec.request);
        const payload = shapeOf(durableSubjects[durable as DurableSubject].payload);
        for (const [from, to] of Object.entries(fields ?? {})) {
          expect(req?.[from], `${subject}: no request field ${from}`).toBeDefined();
          expect(payload?.[to], `${durable}: no payload field ${to}`).toBeDefined();
        }
      }
    }
  });

  it('no request field accepts a value its produced payload field then refuses', () => {
    const failures: string[] = [];
    for (const [subject, spec] of entries) {
      const req = shapeOf(spec.request);
      for (const [durable, fields] of Object.entries(spec.produces ?? {})) {
        const payload = shapeOf(durableSubjects[durable as DurableSubject].payload);
        for (const [from, to] of Object.entries(fields ?? {})) {
          const inField = req?.[from];
          const outField = payload?.[to];
          if (!inField || !outField) continue;
          for (const sample of SAMPLES) {
            const accepted = inField.safeParse(sample);
            if (!accepted.success) continue;
            if (!outField.safeParse(accepted.data).success)
              failures.push(`${subject}.${from} accepts ${show(sample)}, ${durable}.${to} refuses it`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("every subject's request schema accepts its own output again (the gateway validates, the actor re-parses)", () => {
    const failures: string[] = [];
    for (const [subject, spec] of entries) {
      const shape = shapeOf(spec.request);
      if (!shape) continue;
      for (const [field, schema] of Object.entries(shape)) {
        for (const sample of SAMPLES) {
          const first = schema.safeParse(sample);
          if (!first.success) continue;
          // What travels to the actor is JSON: undefined fields vanish, dates become strings.
          const wire: unknown = first.data === undefined ? undefined : JSON.parse(JSON.stringify(first.data));
          if (!schema.safeParse(wire).success)
            failures.push(`${subject}.${field} accepts ${show(sample)} but not its own output ${show(wire)}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses a whitespace-only e-mail on forgot-password at the boundary', () => {
    expect(catalogue['svc.identity.auth.forgot_password'].request.safeParse({ email: ' ' }).success).toBe(false);
    expect(catalogue['svc.identity.auth.forgot_password'].request.parse({ email: ' A@B.co ' })).toEqual({
      email: 'a@b.co',
    });
  });
});
