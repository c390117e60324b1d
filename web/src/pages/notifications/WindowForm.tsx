import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ActionForm } from '../../ui/ActionForm.tsx';
import { Field } from '../../ui/Field.tsx';
import { fieldErrors } from '../../ui/field-errors.ts';
import { SelectField } from '../../ui/SelectField.tsx';
import { CreateFormFooter } from './CreateFormFooter.tsx';
import { EnvironmentSelect } from './EnvironmentSelect.tsx';
import { NameField } from './NameField.tsx';
import { browserZone, timeZones } from './time-zones.ts';

const OTHER = '__other__';

/** A new maintenance window: once, or recurring by an RRULE, at a wall-clock time in a named time zone. */
export function WindowForm({ clientId }: { clientId: string }) {
  const qc = useQueryClient();
  const zones = useMemo(timeZones, []);
  const [name, setName] = useState('');
  const [environmentId, setEnvironmentId] = useState('');
  const [startsAt, setStartsAt] = useState('');
  const [duration, setDuration] = useState('60');
  // A zone the list lacks (or no list at all) is typed instead.
  const [zoneChoice, setZoneChoice] = useState(() => (zones.includes(browserZone()) ? browserZone() : OTHER));
  const [zoneText, setZoneText] = useState(() => (zones.includes(browserZone()) ? '' : browserZone()));
  const [rrule, setRrule] = useState('');
  const timezone = zoneChoice === OTHER ? zoneText.trim() : zoneChoice;
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/maintenance-windows', {
          body: {
            client_id: clientId,
            name,
            environment_id: environmentId || null,
            starts_at: startsAt,
            timezone,
            duration_minutes: Number(duration),
            rrule: rrule.trim() || null,
          },
        }),
      ),
    onSuccess: async () => {
      setName('');
      setStartsAt('');
      setRrule('');
      await qc.invalidateQueries({ queryKey: ['maintenance-windows', clientId] });
    },
  });
  const errors = fieldErrors(create.error, [
    'name',
    'environment_id',
    'starts_at',
    'timezone',
    'duration_minutes',
    'rrule',
  ]);
  return (
    <ActionForm className="card inline" aria-label="New maintenance window" onAction={() => create.mutate()}>
      <h3>New maintenance window</h3>
      <div className="row">
        <NameField label="Window name" name="window-name" value={name} onChange={setName} error={errors.of('name')} />
        <EnvironmentSelect
          clientId={clientId}
          value={environmentId}
          onChange={setEnvironmentId}
          error={errors.of('environment_id')}
        />
      </div>
      <div className="row">
        <Field
          label="Start (local time)"
          name="starts-at"
          type="datetime-local"
          required
          value={startsAt}
          onChange={(e) => setStartsAt(e.target.value)}
          hint="The wall-clock time in the time zone below (YYYY-MM-DDTHH:mm)."
          error={errors.of('starts_at')}
        />
        <Field
          label="Duration (minutes)"
          name="duration"
          type="number"
          min={1}
          max={10080}
          step={1}
          required
          value={duration}
          onChange={(e) => setDuration(e.target.value)}
          error={errors.of('duration_minutes')}
        />
        {zones.length > 0 && (
          <SelectField
            label="Time zone"
            name="timezone"
            value={zoneChoice}
            onChange={(e) => setZoneChoice(e.target.value)}
            error={zoneChoice === OTHER ? undefined : errors.of('timezone')}
          >
            {zones.map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
            <option value={OTHER}>Another (type its name)</option>
          </SelectField>
        )}
        {zoneChoice === OTHER && (
          <Field
            label={zones.length > 0 ? 'Time zone name' : 'Time zone'}
            name="timezone-name"
            required
            value={zoneText}
            onChange={(e) => setZoneText(e.target.value)}
            hint="An IANA name such as Europe/Berlin; not an offset."
            error={errors.of('timezone')}
          />
        )}
      </div>
      <Field
        label="Recurrence (RRULE, optional)"
        name="rrule"
        maxLength={500}
        value={rrule}
        onChange={(e) => setRrule(e.target.value)}
        hint={
          <>
            Empty for a one-off window. For example <code>FREQ=WEEKLY;BYDAY=SU</code> (every Sunday) or{' '}
            <code>FREQ=MONTHLY;BYMONTHDAY=1;COUNT=6</code>; the start above is the first occurrence.
          </>
        }
        error={errors.of('rrule')}
      />
      <CreateFormFooter error={errors.rest} pending={create.isPending} submit="Create the window" />
    </ActionForm>
  );
}
