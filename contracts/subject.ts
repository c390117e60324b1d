import type { z } from 'zod';
import type { ErrorCode } from './errors.ts';

/** One request-reply subject: what goes in, what comes back, which domain errors it may answer with. */
export interface SubjectSpec<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  readonly request: Req;
  readonly reply: Res;
  readonly errors: readonly ErrorCode[];
  readonly summary: string;
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
