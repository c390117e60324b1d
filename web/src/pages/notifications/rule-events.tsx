import { useId, type ReactNode } from 'react';
import { Field } from '../../ui/Field.tsx';
import type { FieldErrors } from '../../ui/field-errors.ts';
import type { Matcher, NewRule, Rule, RuleEvent } from './types.ts';

/**
 * What each kind of event adds to a rule: its name, its own fields (a draft kept across event changes), what it puts
 * in the body, and how a saved rule's part reads. A new event kind is one more entry here, its inputs in the draft
 * (the type check asks for the entry once the API's types list the event).
 */
export interface EventDraft {
  offlineMinutes: string;
  matchers: Matcher[];
  slaWarnMinutes: string;
  /** Comma- or space-separated audit actions. */
  auditActions: string;
  auditGlobal: boolean;
}

export const initialDraft: EventDraft = {
  offlineMinutes: '5',
  matchers: [],
  slaWarnMinutes: '',
  auditActions: '',
  auditGlobal: false,
};

const actionsOf = (text: string): string[] => text.split(/[\s,]+/).filter((a) => a !== '');

interface FieldsProps {
  draft: EventDraft;
  onChange: (draft: EventDraft) => void;
  errors: FieldErrors;
}

interface EventSpec {
  title: string;
  /** The body fields it has inputs for (their API errors are shown there). */
  fields: readonly string[];
  /** Its events belong to a whole client: the rule takes no environment. */
  clientWide?: boolean;
  Fields?: (props: FieldsProps) => ReactNode;
  body: (draft: EventDraft) => Partial<NewRule>;
  summary: (rule: Rule) => string;
}

const OPS: readonly Matcher['op'][] = ['=', '!=', '=~', '!~'];

export const RULE_EVENTS = {
  agent_offline: {
    title: 'Agent offline',
    fields: ['offline_minutes'],
    Fields: ({ draft, onChange, errors }) => (
      <Field
        label="Minutes offline before notifying"
        name="offline-minutes"
        type="number"
        min={0}
        max={10080}
        step="any"
        value={draft.offlineMinutes}
        onChange={(e) => onChange({ ...draft, offlineMinutes: e.target.value })}
        hint="An agent must stay offline this long (0 to 10080; default 5)."
        error={errors.of('offline_minutes')}
      />
    ),
    body: (d) => (d.offlineMinutes.trim() === '' ? {} : { offline_minutes: Number(d.offlineMinutes) }),
    summary: (r) => `offline ${r.offline_minutes ?? 5} min`,
  },
  alert: {
    title: 'Alert firing',
    fields: ['matchers'],
    Fields: (props) => <MatcherRows {...props} />,
    body: (d) => ({ matchers: d.matchers }),
    summary: (r) =>
      r.matchers.length === 0 ? 'every alert' : r.matchers.map((m) => `${m.label}${m.op}"${m.value}"`).join(', '),
  },
  deploy_failed: {
    title: 'Deploy failed',
    fields: [],
    body: () => ({}),
    summary: () => 'every failed deploy',
  },
  sla_breach: {
    title: 'Service-desk SLA breached',
    fields: ['sla_warn_minutes'],
    clientWide: true,
    Fields: ({ draft, onChange, errors }) => (
      <Field
        label="Warn this many minutes before the breach"
        name="sla-warn-minutes"
        type="number"
        min={0}
        max={10080}
        step="any"
        value={draft.slaWarnMinutes}
        onChange={(e) => onChange({ ...draft, slaWarnMinutes: e.target.value })}
        hint="Leave empty to be told at the breach only."
        error={errors.of('sla_warn_minutes')}
      />
    ),
    body: (d) => (d.slaWarnMinutes.trim() === '' ? {} : { sla_warn_minutes: Number(d.slaWarnMinutes) }),
    summary: (r) =>
      r.sla_warn_minutes === null ? 'at the breach' : `${r.sla_warn_minutes} min before, and at the breach`,
  },
  invoice_review: {
    title: 'Invoice waiting for review',
    fields: [],
    clientWide: true,
    body: () => ({}),
    summary: () => 'every invoice entering review, until its review',
  },
  audit: {
    title: 'Audit actions',
    fields: ['audit_actions', 'audit_global'],
    clientWide: true,
    Fields: ({ draft, onChange, errors }) => (
      <>
        <Field
          label="Audit actions"
          name="audit-actions"
          required
          value={draft.auditActions}
          onChange={(e) => onChange({ ...draft, auditActions: e.target.value })}
          hint="Separated by commas, e.g. service_account.key_created, user.super_admin_granted, role.updated."
          error={errors.of('audit_actions')}
        />
        <label className="check">
          <input
            type="checkbox"
            checked={draft.auditGlobal}
            onChange={(e) => onChange({ ...draft, auditGlobal: e.target.checked })}
          />{' '}
          Also global entries (users, roles, super admins; super admins only)
        </label>
        {errors.of('audit_global') && <p className="error">{errors.of('audit_global')}</p>}
      </>
    ),
    body: (d) => ({ audit_actions: actionsOf(d.auditActions), audit_global: d.auditGlobal }),
    summary: (r) => `${r.audit_actions.join(', ')}${r.audit_global ? ' (also global entries)' : ''}`,
  },
} satisfies Record<RuleEvent, EventSpec>;

export const EVENT_KEYS = Object.keys(RULE_EVENTS) as RuleEvent[];

export const isClientWide = (event: RuleEvent): boolean => (RULE_EVENTS[event] as EventSpec).clientWide === true;

/** The event's own part of the rule form (nothing for an event without fields). */
export function EventFields({ event, ...props }: FieldsProps & { event: RuleEvent }) {
  const spec: EventSpec = RULE_EVENTS[event];
  return spec.Fields ? <spec.Fields {...props} /> : null;
}

/** An alert rule's label matchers, as Alertmanager reads them: rows of label, operator, value. */
function MatcherRows({ draft, onChange, errors }: FieldsProps) {
  const set = (i: number, m: Partial<Matcher>): void =>
    onChange({ ...draft, matchers: draft.matchers.map((x, j) => (j === i ? { ...x, ...m } : x)) });
  const id = useId();
  // What the rows do not show themselves: the API's word on the list or on a whole matcher.
  const general = errors
    .under('matchers')
    .filter((p) => !/^matchers\.\d+\.(label|value)$/.test(p.field))
    .map((p) => p.message)
    .join('; ');
  return (
    <fieldset>
      <legend>Label matchers</legend>
      <p className="hint">
        Every matcher must hold (none: every alert). <code>=~</code> and <code>!~</code> take a regular expression,
        anchored at both ends.
      </p>
      {draft.matchers.map((m, i) => (
        <div className="row matcher" key={i} role="group" aria-label={`Matcher ${i + 1}`}>
          <Field
            label={`Label of matcher ${i + 1}`}
            name={`matcher-${i}-label`}
            required
            value={m.label}
            onChange={(e) => set(i, { label: e.target.value })}
            error={errors.of(`matchers.${i}.label`)}
          />
          <div className="field">
            <label htmlFor={`${id}-op-${i}`}>{`Operator of matcher ${i + 1}`}</label>
            <select id={`${id}-op-${i}`} value={m.op} onChange={(e) => set(i, { op: e.target.value as Matcher['op'] })}>
              {OPS.map((op) => (
                <option key={op} value={op}>
                  {op}
                </option>
              ))}
            </select>
          </div>
          <Field
            label={`Value of matcher ${i + 1}`}
            name={`matcher-${i}-value`}
            maxLength={500}
            value={m.value}
            onChange={(e) => set(i, { value: e.target.value })}
            error={errors.of(`matchers.${i}.value`)}
          />
          <button
            type="button"
            className="secondary small"
            onClick={() => onChange({ ...draft, matchers: draft.matchers.filter((_, j) => j !== i) })}
          >
            Remove matcher {i + 1}
          </button>
        </div>
      ))}
      {general && <div className="field-error">{general}</div>}
      {draft.matchers.length < 20 && (
        <button
          type="button"
          className="secondary small"
          onClick={() => onChange({ ...draft, matchers: [...draft.matchers, { label: '', op: '=', value: '' }] })}
        >
          Add a matcher
        </button>
      )}
    </fieldset>
  );
}
