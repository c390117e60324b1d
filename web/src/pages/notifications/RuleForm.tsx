import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ActionForm } from '../../ui/ActionForm.tsx';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Field } from '../../ui/Field.tsx';
import { fieldErrors } from '../../ui/field-errors.ts';
import { SelectField } from '../../ui/SelectField.tsx';
import { numberOrUndefined, useChannels } from './queries.ts';
import { EVENT_KEYS, EventFields, initialDraft, isClientWide, RULE_EVENTS, type EventDraft } from './rule-events.tsx';
import { CreateFormFooter } from './CreateFormFooter.tsx';
import { EnvironmentSelect } from './EnvironmentSelect.tsx';
import { NameField } from './NameField.tsx';
import { StepsEditor, type StepDraft } from './StepsEditor.tsx';
import { SEVERITIES, type RuleEvent, type Severity } from './types.ts';

const FIRST_STEP: StepDraft = { after: '0', channelIds: [] };

/** A new rule of the client: which event, where, how loud, and who hears of it in which escalation step. */
export function RuleForm({ clientId }: { clientId: string }) {
  const qc = useQueryClient();
  const channels = useChannels(clientId);
  const [name, setName] = useState('');
  const [event, setEvent] = useState<RuleEvent>('agent_offline');
  const [severity, setSeverity] = useState<Severity>('warning');
  const [environmentId, setEnvironmentId] = useState('');
  const [draft, setDraft] = useState<EventDraft>(initialDraft);
  const [groupWindow, setGroupWindow] = useState('60');
  const [steps, setSteps] = useState<StepDraft[]>([FIRST_STEP]);
  const [enabled, setEnabled] = useState(true);
  const create = useMutation({
    mutationFn: () => {
      const grouping = numberOrUndefined(groupWindow);
      return unwrap(
        api.POST('/api/v1/notification-rules', {
          body: {
            client_id: clientId,
            name,
            event,
            severity,
            environment_id: isClientWide(event) ? null : environmentId || null,
            ...RULE_EVENTS[event].body(draft),
            ...(grouping === undefined ? {} : { group_window_minutes: grouping }),
            steps: steps.map((s, i) => ({ after_minutes: i === 0 ? 0 : Number(s.after), channel_ids: s.channelIds })),
            enabled,
          },
        }),
      );
    },
    onSuccess: async () => {
      setName('');
      setDraft(initialDraft);
      setSteps([FIRST_STEP]);
      await qc.invalidateQueries({ queryKey: ['notification-rules', clientId] });
    },
  });
  const errors = fieldErrors(create.error, [
    'name',
    'event',
    'severity',
    'environment_id',
    'group_window_minutes',
    'steps',
    ...RULE_EVENTS[event].fields,
  ]);
  return (
    <ActionForm className="card inline" aria-label="New rule" onAction={() => create.mutate()}>
      <h3>New rule</h3>
      <div className="row">
        <NameField label="Rule name" name="rule-name" value={name} onChange={setName} error={errors.of('name')} />
        <SelectField
          label="Event"
          name="event"
          value={event}
          onChange={(e) => setEvent(e.target.value as RuleEvent)}
          error={errors.of('event')}
        >
          {EVENT_KEYS.map((k) => (
            <option key={k} value={k}>
              {RULE_EVENTS[k].title}
            </option>
          ))}
        </SelectField>
        <SelectField
          label="Severity"
          name="severity"
          value={severity}
          onChange={(e) => setSeverity(e.target.value as Severity)}
          hint="What its messages carry; not a filter."
          error={errors.of('severity')}
        >
          {SEVERITIES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </SelectField>
        {!isClientWide(event) && (
          <EnvironmentSelect
            clientId={clientId}
            value={environmentId}
            onChange={setEnvironmentId}
            error={errors.of('environment_id')}
          />
        )}
      </div>
      <EventFields event={event} draft={draft} onChange={setDraft} errors={errors} />
      <Field
        label="Group window (minutes)"
        name="group-window"
        type="number"
        min={0}
        max={10080}
        value={groupWindow}
        onChange={(e) => setGroupWindow(e.target.value)}
        hint="Repeats within it are counted, not sent (0 to 10080)."
        error={errors.of('group_window_minutes')}
      />
      <StepsEditor steps={steps} onChange={setSteps} channels={channels.data?.data ?? []} errors={errors} />
      <ErrorNotice error={channels.error} />
      <CreateFormFooter
        enabled={{ value: enabled, onChange: setEnabled }}
        error={errors.rest}
        pending={create.isPending}
        submit="Create the rule"
      />
    </ActionForm>
  );
}
