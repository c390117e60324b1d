import { DomainError } from '../contracts/errors.ts';

/**
 * PostgreSQL errors that are the caller's or the race's fault, not the store's: invalid input (class 22), integrity
 * violations (class 23), a NUL in a bind parameter (08P01), serialization failures and deadlocks (40001, 40P01), a statement cancelled at the deadline
 * (57014). Raw `pg` errors and MikroORM's wrappers (DriverException copies the pg fields: code, detail, table,
 * column, constraint) are both recognised, also as the `cause` of another error.
 */

/** The pg fields used here; all optional, as pg sets them per error class. */
interface PgFields {
  code?: unknown;
  detail?: unknown;
  table?: unknown;
  column?: unknown;
  constraint?: unknown;
  message: string;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The first error in `err`'s cause chain that carries a SQLSTATE. */
export function pgErrorOf(err: unknown): (PgFields & { code: string }) | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as Error & PgFields).code;
    if (typeof code === 'string' && SQLSTATE.test(code)) return e as Error & PgFields & { code: string };
  }
  return undefined;
}

export const sqlStateOf = (err: unknown): string | undefined => pgErrorOf(err)?.code;

/** Serialization failure or deadlock: the transaction lost a race and may simply be run again. */
export const isTransactionRace = (err: unknown): boolean => {
  const code = sqlStateOf(err);
  return code === '40001' || code === '40P01';
};

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `client_id` → `client`, `service_accounts` → `service account`. */
function resourceName(column: string | undefined, table: string | undefined): string {
  if (column) return column.replace(/_id$/, '').replaceAll('_', ' ');
  if (table) return table.replace(/ies$/, 'y').replace(/s$/, '').replaceAll('_', ' ');
  return 'referenced resource';
}

/** Column and table of a foreign-key detail: `Key (client_id)=(…) is not present in table "clients".` */
function foreignKeyParts(e: PgFields): { column?: string; table?: string; removing: boolean } {
  const detail = str(e.detail) ?? '';
  const removing = /is still referenced from table/.test(detail) || /^update or delete on table/.test(e.message);
  const m = /^Key \(([^)]+)\)=\(.*\) is (?:not present in|still referenced from) table "([^"]+)"/s.exec(detail);
  if (m) return { column: m[1]?.split(',')[0]?.trim(), table: m[2], removing };
  // Other server locales: fall back on the constraint name, `<table>_<column>_fkey` by default.
  const c = /^(?:.+?)_(\w+_id)_fkey$/.exec(str(e.constraint) ?? '');
  return { ...(c?.[1] ? { column: c[1] } : {}), removing };
}

const INVALID_INPUT: Record<string, string> = {
  '22001': 'a value is too long',
  '22003': 'a number is out of range',
  '22007': 'a date or time is malformed',
  '22008': 'a date or time is out of range',
  '22021': 'a value contains characters that cannot be stored (NUL)',
  '22P02': 'a value has an invalid format',
  '22P05': 'a value contains characters that cannot be stored (NUL)',
};

/**
 * The DomainError a PostgreSQL refusal stands for, or undefined when `err` is not one of them (then the runtime
 * decides between `unavailable` and `internal_error`). Messages name the column or resource, never the values.
 */
export function storeErrorToDomain(err: unknown): DomainError | undefined {
  const e = pgErrorOf(err);
  if (!e) return undefined;
  const { code } = e;
  const column = str(e.column);
  switch (code) {
    case '23503': {
      const fk = foreignKeyParts(e);
      if (fk.removing)
        return new DomainError(
          'conflict',
          `the ${resourceName(undefined, str(e.table))} is still in use${fk.table ? ` by ${fk.table.replaceAll('_', ' ')}` : ''}`,
        );
      return new DomainError('not_found', `${resourceName(fk.column, fk.table)} not found`);
    }
    case '23505': {
      const key = /^Key \(([^)]+)\)=/.exec(str(e.detail) ?? '')?.[1];
      return new DomainError('conflict', key ? `${key}: already exists` : 'already exists');
    }
    case '23502':
      return new DomainError('bad_request', column ? `${column}: must not be null` : 'a required value is missing');
    case '23514':
      return new DomainError('bad_request', `a value breaks the rule ${str(e.constraint) ?? 'of the table'}`);
    case '23P01':
      return new DomainError('conflict', 'overlaps an existing entry');
    case '40001':
    case '40P01':
      return new DomainError('conflict', 'the change conflicted with a concurrent one; retry');
    case '08P01':
      // Protocol violation: what the server answers for a NUL inside a bind parameter ("invalid message format").
      // The statement was refused; the connection and the server are fine, so it is not an outage.
      return new DomainError('bad_request', 'a value contains characters that cannot be stored (NUL)');
    case '57014':
      // statement_timeout (set from the request deadline) or a cancel: the deadline, not the store, ran out.
      return new DomainError('timeout', 'the store did not answer before the deadline');
  }
  if (code.startsWith('22')) {
    const what = INVALID_INPUT[code] ?? 'a value is invalid';
    return new DomainError('bad_request', column ? `${column}: ${what}` : what);
  }
  return undefined;
}
