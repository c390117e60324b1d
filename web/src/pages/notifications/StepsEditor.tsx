import { useId } from 'react';
import { Field } from '../../ui/Field.tsx';
import type { FieldErrors } from '../../ui/field-errors.ts';
import type { Channel } from './types.ts';

/** A step as typed: minutes as text until sent. */
export interface StepDraft {
  after: string;
  channelIds: string[];
}

export const MAX_STEPS = 5;

/**
 * The escalation steps of a rule: the first fires at once, each next one some minutes after the one before (while
 * nobody acknowledged), to its own channels of the client.
 */
export function StepsEditor({
  steps,
  onChange,
  channels,
  errors,
}: {
  steps: StepDraft[];
  onChange: (steps: StepDraft[]) => void;
  channels: Channel[];
  errors: FieldErrors;
}) {
  const set = (i: number, s: Partial<StepDraft>): void => onChange(steps.map((x, j) => (j === i ? { ...x, ...s } : x)));
  const id = useId();
  // What the rows do not show themselves: the API's word on the list or on a whole step.
  const general = errors
    .under('steps')
    .filter((p) => !/^steps\.\d+\.(after_minutes|channel_ids)(\.|$)/.test(p.field))
    .map((p) => p.message)
    .join('; ');
  return (
    <fieldset>
      <legend>Escalation steps</legend>
      {channels.length === 0 && <p className="hint">This client has no channel yet: create one on the Channels tab.</p>}
      {steps.map((s, i) => {
        const channelError = errors.joined(`steps.${i}.channel_ids`);
        return (
          <fieldset key={i} className="step">
            <legend>Step {i + 1}</legend>
            <Field
              label={i === 0 ? `Step 1 fires after (minutes)` : `Step ${i + 1}: minutes after step ${i}`}
              name={`step-${i}-after`}
              type="number"
              min={0}
              max={1440}
              required
              readOnly={i === 0}
              value={i === 0 ? '0' : s.after}
              onChange={(e) => set(i, { after: e.target.value })}
              hint={i === 0 ? 'The first step fires at once.' : '0 to 1440, if nobody acknowledged by then.'}
              error={errors.of(`steps.${i}.after_minutes`)}
            />
            <fieldset className="choices" aria-describedby={channelError ? `${id}-channels-${i}` : undefined}>
              <legend>Channels of step {i + 1}</legend>
              {channels.map((c) => (
                <label key={c.id} className="check">
                  <input
                    type="checkbox"
                    checked={s.channelIds.includes(c.id)}
                    onChange={(e) =>
                      set(i, {
                        channelIds: e.target.checked
                          ? [...s.channelIds, c.id]
                          : s.channelIds.filter((id) => id !== c.id),
                      })
                    }
                  />{' '}
                  {c.name}
                  <span className="muted small"> ({c.kind})</span>
                </label>
              ))}
              {channelError && (
                <div id={`${id}-channels-${i}`} className="field-error">
                  {channelError}
                </div>
              )}
            </fieldset>
            {steps.length > 1 && (
              <button
                type="button"
                className="secondary small"
                onClick={() => onChange(steps.filter((_, j) => j !== i))}
              >
                Remove step {i + 1}
              </button>
            )}
          </fieldset>
        );
      })}
      {general && <div className="field-error">{general}</div>}
      {steps.length < MAX_STEPS && (
        <button
          type="button"
          className="secondary small"
          onClick={() => onChange([...steps, { after: '15', channelIds: [] }])}
        >
          Add a step
        </button>
      )}
    </fieldset>
  );
}
