import { parsePromQL, PromQLSyntaxError, type At, type PromNode } from './promql-parse.ts';

/**
 * What a caller's PromQL may do before it reaches VictoriaMetrics (POST /metrics/query). Tenancy itself is enforced by
 * VictoriaMetrics: the service adds one `extra_filters[]` selector (client, and the named environment and/or host),
 * which the server ANDs into every series selector of the query — inside `or`, subqueries, aggregations, everywhere.
 * What a filter on stored series cannot stop is an expression that *writes* tenant labels itself, and this guard
 * refuses those:
 * - `label_replace` / `label_join` whose destination is a tenant label, `count_values` naming one as its label;
 * - `absent()` / `absent_over_time()` over a selector that names a tenant label (they answer with a synthetic series
 *   carrying the selector's equality matchers, e.g. `{client_id="<another client>"} 1`);
 * - any function or aggregation outside the list below (MetricsQL's label_set, label_copy, alias… and whatever a
 *   later server version adds): refused rather than trusted.
 * The parsed tree is printed again in a canonical, fully parenthesized form, and that text is what goes upstream, so
 * the server runs exactly the tree this guard judged (no parser differential between us and it).
 */

export const TENANT_LABELS: readonly string[] = ['client_id', 'environment_id', 'host_id'];

export const GUARD_LIMITS = {
  /** Characters of the caller's query text. */
  maxQueryLength: 4_096,
  /** Series selectors in one query. */
  maxSelectors: 20,
  /** Any range window, subquery window or offset. */
  maxWindowMs: 31 * 86_400_000,
  /** Points one subquery evaluation may produce per series (as for the outer step, Prometheus' 11,000). */
  maxSubqueryPoints: 11_000,
} as const;

/** Standard PromQL functions (Prometheus 2.x). */
const FUNCTIONS = new Set([
  'abs',
  'absent',
  'absent_over_time',
  'acos',
  'acosh',
  'asin',
  'asinh',
  'atan',
  'atanh',
  'avg_over_time',
  'ceil',
  'changes',
  'clamp',
  'clamp_max',
  'clamp_min',
  'cos',
  'cosh',
  'count_over_time',
  'day_of_month',
  'day_of_week',
  'day_of_year',
  'days_in_month',
  'deg',
  'delta',
  'deriv',
  'exp',
  'floor',
  'histogram_quantile',
  'holt_winters',
  'hour',
  'idelta',
  'increase',
  'irate',
  'label_join',
  'label_replace',
  'last_over_time',
  'ln',
  'log10',
  'log2',
  'max_over_time',
  'min_over_time',
  'minute',
  'month',
  'pi',
  'predict_linear',
  'present_over_time',
  'quantile_over_time',
  'rad',
  'rate',
  'resets',
  'round',
  'scalar',
  'sgn',
  'sin',
  'sinh',
  'sort',
  'sort_desc',
  'sqrt',
  'stddev_over_time',
  'stdvar_over_time',
  'sum_over_time',
  'tan',
  'tanh',
  'time',
  'timestamp',
  'vector',
  'year',
]);

/** A query the service refuses; the message is for the caller. */
export class QueryRefused extends Error {
  override name = 'QueryRefused';
}

const isTenant = (label: string): boolean => TENANT_LABELS.includes(label);

/** Parses and judges `query`; returns the canonical text to send upstream, or throws QueryRefused. */
export function guardQuery(query: string): string {
  if (query.trim() === '') throw new QueryRefused('the query is empty');
  if (query.length > GUARD_LIMITS.maxQueryLength)
    throw new QueryRefused(`the query is longer than ${GUARD_LIMITS.maxQueryLength} characters`);
  let tree: PromNode;
  try {
    tree = parsePromQL(query);
  } catch (err) {
    if (err instanceof PromQLSyntaxError) throw new QueryRefused(`the query is not valid PromQL: ${err.message}`);
    throw err;
  }
  let selectors = 0;
  walk(tree, (n) => {
    if (n.kind === 'selector') selectors++;
    check(n);
  });
  if (selectors > GUARD_LIMITS.maxSelectors)
    throw new QueryRefused(
      `the query has ${selectors} series selectors; at most ${GUARD_LIMITS.maxSelectors} are allowed`,
    );
  return print(tree);
}

function walk(n: PromNode, visit: (n: PromNode) => void): void {
  visit(n);
  switch (n.kind) {
    case 'subquery':
    case 'unary':
      walk(n.expr, visit);
      break;
    case 'call':
      n.args.forEach((a) => walk(a, visit));
      break;
    case 'aggregate':
      if (n.param) walk(n.param, visit);
      walk(n.expr, visit);
      break;
    case 'binary':
      walk(n.lhs, visit);
      walk(n.rhs, visit);
      break;
    default:
      break;
  }
}

/** The string-literal argument `i` of a call, or a refusal naming what was expected. */
function literalArg(n: Extract<PromNode, { kind: 'call' }>, i: number, what: string): string {
  const arg = n.args[i];
  if (arg?.kind !== 'string') throw new QueryRefused(`${n.func}: argument ${i + 1} (${what}) must be a quoted string`);
  return arg.value;
}

function checkWindow(ms: number | undefined, what: string): void {
  if (ms !== undefined && Math.abs(ms) > GUARD_LIMITS.maxWindowMs)
    throw new QueryRefused(`${what} longer than 31 days`);
}

function check(n: PromNode): void {
  switch (n.kind) {
    case 'selector':
      checkWindow(n.rangeMs, 'a range window is');
      checkWindow(n.offsetMs, 'an offset is');
      return;
    case 'subquery': {
      checkWindow(n.rangeMs, 'a subquery window is');
      checkWindow(n.offsetMs, 'an offset is');
      // Without a step the server uses the query's own step, which the route already bounds.
      if (n.stepMs !== undefined && n.rangeMs / n.stepMs > GUARD_LIMITS.maxSubqueryPoints) {
        throw new QueryRefused(
          `a subquery resolution gives more than ${GUARD_LIMITS.maxSubqueryPoints} points per series; use a coarser step`,
        );
      }
      return;
    }
    case 'call': {
      if (!FUNCTIONS.has(n.func)) throw new QueryRefused(`function ${n.func} is not allowed`);
      if (n.func === 'label_replace') {
        if (n.args.length !== 5) throw new QueryRefused('label_replace takes 5 arguments');
        const dst = literalArg(n, 1, 'destination label');
        for (const i of [2, 3, 4]) literalArg(n, i, 'string');
        if (isTenant(dst)) throw new QueryRefused(`label_replace may not write the tenant label ${dst}`);
      }
      if (n.func === 'label_join') {
        if (n.args.length < 3) throw new QueryRefused('label_join takes at least 3 arguments');
        const dst = literalArg(n, 1, 'destination label');
        for (let i = 2; i < n.args.length; i++) literalArg(n, i, 'string');
        if (isTenant(dst)) throw new QueryRefused(`label_join may not write the tenant label ${dst}`);
      }
      if (n.func === 'absent' || n.func === 'absent_over_time') {
        walk({ kind: 'call', func: 'inner', args: n.args }, (inner) => {
          if (inner.kind === 'selector' && inner.matchers.some((m) => isTenant(m.label))) {
            throw new QueryRefused(
              `${n.func} over a selector naming ${TENANT_LABELS.join(', ')} is not allowed (its answer would carry those labels)`,
            );
          }
        });
      }
      return;
    }
    case 'aggregate':
      if (n.op === 'count_values') {
        if (n.param?.kind !== 'string')
          throw new QueryRefused('count_values: its first argument must be a quoted label name');
        if (isTenant(n.param.value))
          throw new QueryRefused(`count_values may not write the tenant label ${n.param.value}`);
      }
      return;
    default:
      return;
  }
}

/** Label values and string literals, quoted so Go's strconv.Unquote (PromQL's reader) gives the same string back. */
export const promString = (s: string): string => JSON.stringify(s);

const printNumber = (v: number): string =>
  Number.isNaN(v) ? 'NaN' : v === Infinity ? 'Inf' : v === -Infinity ? '(-Inf)' : String(v);
const printAt = (at: At): string => (at === 'start' ? 'start()' : at === 'end' ? 'end()' : printNumber(at));
const modifiers = (n: { offsetMs?: number; at?: At }): string =>
  `${n.offsetMs !== undefined ? ` offset ${n.offsetMs < 0 ? '-' : ''}${Math.abs(n.offsetMs)}ms` : ''}${n.at !== undefined ? ` @ ${printAt(n.at)}` : ''}`;
const labels = (ls: string[]): string => `(${ls.join(', ')})`;

/** Canonical PromQL for a checked tree: names as `__name__` matchers, durations in ms, every operand in parentheses. */
export function print(n: PromNode): string {
  switch (n.kind) {
    case 'number':
      return printNumber(n.value);
    case 'string':
      return promString(n.value);
    case 'selector': {
      const ms = [...(n.name !== undefined ? [{ label: '__name__', op: '=', value: n.name }] : []), ...n.matchers];
      return `{${ms.map((m) => `${m.label}${m.op}${promString(m.value)}`).join(', ')}}${n.rangeMs !== undefined ? `[${n.rangeMs}ms]` : ''}${modifiers(n)}`;
    }
    case 'subquery':
      return `(${print(n.expr)})[${n.rangeMs}ms:${n.stepMs !== undefined ? `${n.stepMs}ms` : ''}]${modifiers(n)}`;
    case 'call':
      return `${n.func}(${n.args.map(print).join(', ')})`;
    case 'aggregate':
      return `${n.op}${n.grouping ? ` ${n.grouping.mode} ${labels(n.grouping.labels)}` : ''} (${n.param ? `${print(n.param)}, ` : ''}${print(n.expr)})`;
    case 'binary': {
      const matching = n.matching ? ` ${n.matching.mode}${labels(n.matching.labels)}` : '';
      const group = n.group ? ` group_${n.group.side}${labels(n.group.labels)}` : '';
      return `(${print(n.lhs)}) ${n.op}${n.bool ? ' bool' : ''}${matching}${group} (${print(n.rhs)})`;
    }
    case 'unary':
      return `${n.op}(${print(n.expr)})`;
  }
}
