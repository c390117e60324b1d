/**
 * The PQL field table: every field a query may name, its type, and the operators that apply to it. `GET /search/fields`
 * answers it; the parser checks fields, operators and value types against it; the compiler reads the columns from it.
 */

export type Prefix = 'host' | 'label' | 'tag' | 'service' | 'container' | 'package';
/** Prefixes whose fields hold several records per host (any-of semantics, `prefix[...]` record conditions). */
export type RecordPrefix = 'service' | 'container' | 'package';
export type FieldType = 'string' | 'number' | 'version' | 'boolean' | 'datetime';
export type Op = '=' | '!=' | '~' | '>' | '<' | '>=' | '<=' | 'IN' | 'NOT IN' | 'EXISTS';

export const PREFIXES: readonly Prefix[] = ['host', 'label', 'tag', 'service', 'container', 'package'];
export const RECORD_PREFIXES: readonly RecordPrefix[] = ['service', 'container', 'package'];
export const isRecordPrefix = (p: string): p is RecordPrefix => (RECORD_PREFIXES as readonly string[]).includes(p);

const OPERATORS: Record<FieldType, readonly Op[]> = {
  string: ['=', '!=', '~', 'IN', 'NOT IN', 'EXISTS'],
  number: ['=', '!=', '>', '<', '>=', '<=', 'IN', 'NOT IN'],
  version: ['=', '!=', '~', '>', '<', '>=', '<=', 'IN', 'NOT IN', 'EXISTS'],
  boolean: ['=', '!=', 'EXISTS'],
  datetime: ['=', '!=', '>', '<', '>=', '<=', 'EXISTS'],
};

export interface FieldDef {
  prefix: Prefix;
  /** `*` for label and tag fields (any key). */
  name: string;
  type: FieldType;
  operators: readonly Op[];
  /** Column in the field's table (hosts, or the record table of its prefix). */
  column: string;
  /** The column may be NULL (unknown): every comparison with it is false, negated or not. */
  nullable?: boolean;
  /** A byte count: number literals may carry a size unit (16GiB). */
  bytes?: boolean;
  /** A stored sort key of the version (see Migration0009); without it the key is computed per row. */
  versionKey?: string;
  /**
   * The column has the search index on (lower(column) COLLATE "C", ...) (Migration0009): globs and equality are written
   * on that expression so a prefix glob or an exact name reads a range of it.
   */
  lowerIndex?: boolean;
  /** The value lives in another table, reached through a host column: the slug of the host's environment or client. */
  lookup?: { table: 'environments' | 'clients'; via: 'environment_id' | 'client_id' };
}

const field = (prefix: Prefix, name: string, type: FieldType, extra: Partial<FieldDef> = {}): FieldDef => ({
  prefix,
  name,
  type,
  operators: OPERATORS[type],
  column: name,
  ...extra,
});

/** Host fields: one value per host. */
const HOST_FIELDS: readonly FieldDef[] = [
  field('host', 'hostname', 'string', { lowerIndex: true }),
  field('host', 'ip_address', 'string'),
  field('host', 'os', 'string'),
  field('host', 'os_version', 'version'),
  field('host', 'kernel_version', 'version'),
  field('host', 'arch', 'string'),
  field('host', 'cpu_cores', 'number'),
  field('host', 'memory_total_bytes', 'number', { bytes: true }),
  field('host', 'agent_status', 'string'),
  field('host', 'agent_version', 'version'),
  field('host', 'last_seen_at', 'datetime', { nullable: true }),
  field('host', 'environment', 'string', { column: 'slug', lookup: { table: 'environments', via: 'environment_id' } }),
  field('host', 'client', 'string', { column: 'slug', lookup: { table: 'clients', via: 'client_id' } }),
];

/** Record fields: a host has any number of services, containers and packages. */
const RECORD_FIELDS: readonly FieldDef[] = [
  field('service', 'name', 'string'),
  field('service', 'active_state', 'string'),
  field('service', 'sub_state', 'string'),
  field('service', 'load_state', 'string'),
  field('service', 'enabled', 'boolean', { nullable: true }),
  field('container', 'name', 'string'),
  field('container', 'image', 'string'),
  field('container', 'state', 'string'),
  field('container', 'runtime', 'string'),
  field('package', 'name', 'string'),
  field('package', 'version', 'version', { versionKey: 'version_key' }),
  field('package', 'manager', 'string'),
  field('package', 'architecture', 'string'),
];

/** Agent labels and user tags: any key, string values. */
const KEYED_FIELDS: readonly FieldDef[] = [
  field('label', '*', 'string', { column: 'labels' }),
  field('tag', '*', 'string', { column: 'tags' }),
];

export const FIELDS: readonly FieldDef[] = [...HOST_FIELDS, ...KEYED_FIELDS, ...RECORD_FIELDS];

export const RECORD_TABLES: Record<RecordPrefix, string> = {
  service: 'host_services',
  container: 'host_containers',
  package: 'host_packages',
};

export function findField(prefix: Prefix, name: string): FieldDef | undefined {
  if (prefix === 'label' || prefix === 'tag') return FIELDS.find((f) => f.prefix === prefix);
  return FIELDS.find((f) => f.prefix === prefix && f.name === name);
}

export const hostField = (name: string): FieldDef | undefined => HOST_FIELDS.find((f) => f.name === name);
export const HOST_FIELD_NAMES: readonly string[] = HOST_FIELDS.map((f) => f.name);

/** What `GET /search/fields` answers. */
export const fieldList = (): { prefix: Prefix; name: string; type: FieldType; operators: Op[] }[] =>
  FIELDS.map((f) => ({ prefix: f.prefix, name: f.name, type: f.type, operators: [...f.operators] }));
