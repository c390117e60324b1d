import { LABEL_NAME } from '../../../contracts/domains/agent-telemetry.ts';
import { TENANT_LABELS } from './promql-guard.ts';

/**
 * `labels_key`: how the metric routes name one series of a host among those sharing a metric name. It is the sample's
 * own labels (the agent's: `cpu`, `mountpoint`…; never `__name__` or the tenant labels the ingest adds) as
 * `key=value` pairs sorted by key and joined by commas; the empty string is the series without such labels. In a value
 * a backslash is written `\\` and a comma `\,` (a `=` needs no escape: a key never holds one).
 */

/** Labels of a stored series that are not the sample's own. */
const SERVER_LABELS = new Set(['__name__', ...TENANT_LABELS]);

/** The sample's own labels of a stored series (its name and tenant labels dropped). */
export function ownLabels(metric: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(metric)) if (!SERVER_LABELS.has(k)) out[k] = v;
  return out;
}

const escapeValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/,/g, '\\,');

/** The labels_key of a label set (tenant labels and the name ignored). */
export function labelsKeyOf(labels: Record<string, string>): string {
  const own = ownLabels(labels);
  return Object.keys(own)
    .sort()
    .map((k) => `${k}=${escapeValue(own[k]!)}`)
    .join(',');
}

/** Thrown with a message naming what is wrong; the caller turns it into a 400. */
export class LabelsKeyError extends Error {
  override name = 'LabelsKeyError';
}

/** Parses a labels_key (pairs in any order) into labels; the empty string is no labels. */
export function parseLabelsKey(key: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (key === '') return labels;
  const pairs: string[] = [];
  let current = '';
  for (let i = 0; i < key.length; i++) {
    const c = key[i]!;
    if (c === '\\') {
      const e = key[i + 1];
      if (e !== '\\' && e !== ',')
        throw new LabelsKeyError('labels_key: a backslash must be followed by \\ or , (\\\\ and \\, are the escapes)');
      current += c + e;
      i++;
    } else if (c === ',') {
      pairs.push(current);
      current = '';
    } else current += c;
  }
  pairs.push(current);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new LabelsKeyError(
        `labels_key: expected key=value pairs separated by commas, got ${JSON.stringify(pair.slice(0, 60))}`,
      );
    const name = pair.slice(0, eq);
    if (!LABEL_NAME.test(name) || name.length > 100)
      throw new LabelsKeyError(`labels_key: ${JSON.stringify(name.slice(0, 60))} is not a label name`);
    if (SERVER_LABELS.has(name))
      throw new LabelsKeyError(`labels_key: ${name} is set by the server, not part of a labels_key`);
    if (Object.hasOwn(labels, name)) throw new LabelsKeyError(`labels_key: ${name} is given twice`);
    labels[name] = pair.slice(eq + 1).replace(/\\([\\,])/g, '$1');
  }
  return labels;
}
