import type { z } from 'zod';
import type { ErrorCode } from './errors.ts';

/**
 * Durable payloads a subject's handler publishes from its input: for each durable subject, which request field
 * (top-level key) feeds which payload field. test/contracts/agreement.unit.test.ts checks that whatever the request
 * schema accepts in such a field, the payload schema accepts too (a refusal there would be a 500 after the 200 check),
 * and that each key is a durable subject of streams.ts. Keyed by string here: streams.ts imports the domains'
 * payload schemas, which are declared with this file's helpers, so naming its type here would close a loop.
 */
export type Produces = Readonly<Record<string, Readonly<Record<string, string>>>>;

/** One request-reply subject: what goes in, what comes back, which domain errors it may answer with. */
export interface SubjectSpec<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  readonly request: Req;
  readonly reply: Res;
  readonly errors: readonly ErrorCode[];
  readonly summary: string;
  /**
   * `'safe'`: repeating the request changes nothing (a read), so a caller may send it again when an attempt is slow
   * (e.g. its actor instance died with the request in flight). Absent: never repeated by the runtime.
   */
  readonly retry?: 'safe';
  readonly produces?: Produces;
}

export type Catalogue = Readonly<Record<string, SubjectSpec>>;

export const subjects = <const T extends Record<string, SubjectSpec>>(table: T): T => table;

export type SubjectName<C extends Catalogue> = keyof C & string;
export type RequestIn<C extends Catalogue, S extends SubjectName<C>> = z.input<C[S]['request']>;
export type RequestOut<C extends Catalogue, S extends SubjectName<C>> = z.output<C[S]['request']>;
export type ReplyIn<C extends Catalogue, S extends SubjectName<C>> = z.input<C[S]['reply']>;
export type ReplyOut<C extends Catalogue, S extends SubjectName<C>> = z.output<C[S]['reply']>;

/** Subjects are `svc.<domain>.<verb...>`: the domain is the queue group its actors serve in. */
export const domainOf = (subject: string): string => {
  const parts = subject.split('.');
  if (parts.length < 3 || parts[0] !== 'svc') throw new Error(`subject ${subject} is not svc.<domain>.<verb>`);
  return parts[1] as string;
};

/** Subjects of one domain, as a type: `DomainSubjects<typeof catalogue, 'identity'>`. */
export type DomainSubjects<C extends Catalogue, D extends string> = Extract<SubjectName<C>, `svc.${D}.${string}`>;
