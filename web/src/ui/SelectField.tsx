import { useId, type ReactNode, type SelectHTMLAttributes } from 'react';

/** A labelled select with its hint and the API's error for it, tied together as `Field` ties an input. */
export function SelectField({
  label,
  hint,
  error,
  children,
  ...select
}: { label: string; hint?: ReactNode; error?: string | undefined } & SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-invalid={error ? true : undefined} aria-describedby={describedBy || undefined} {...select}>
        {children}
      </select>
      {hint && (
        <div id={`${id}-hint`} className="hint">
          {hint}
        </div>
      )}
      {error && (
        <div id={`${id}-error`} className="field-error">
          {error}
        </div>
      )}
    </div>
  );
}
