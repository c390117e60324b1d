import { Field } from '../../ui/Field.tsx';

/** The name of a new channel, rule or window: required, at most 200 characters (the one name schema of all three). */
export function NameField({
  label,
  name,
  value,
  onChange,
  error,
}: {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  error: string | undefined;
}) {
  return (
    <Field
      label={label}
      name={name}
      required
      maxLength={200}
      value={value}
      onChange={(e) => onChange(e.target.value)}
      error={error}
    />
  );
}
