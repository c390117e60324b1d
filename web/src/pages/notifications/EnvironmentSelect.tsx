import { SelectField } from '../../ui/SelectField.tsx';
import { useEnvironments } from './queries.ts';

/** The scope of a rule or window: the whole client, or one of its environments. */
export function EnvironmentSelect({
  clientId,
  value,
  onChange,
  error,
}: {
  clientId: string;
  value: string;
  onChange: (id: string) => void;
  error: string | undefined;
}) {
  const envs = useEnvironments(clientId);
  return (
    <SelectField
      label="Environment"
      name="environment"
      value={value}
      onChange={(e) => onChange(e.target.value)}
      hint={envs.error ? 'The environments could not be listed; the whole client can still be chosen.' : undefined}
      error={error}
    >
      <option value="">The whole client</option>
      {(envs.data?.data ?? []).map((e) => (
        <option key={e.id} value={e.id}>
          {e.name} ({e.slug})
        </option>
      ))}
    </SelectField>
  );
}
