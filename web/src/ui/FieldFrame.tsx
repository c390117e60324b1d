import { useId, type ReactNode } from 'react';

/** What every labelled control takes besides its own attributes. */
export interface FieldFrameProps {
  label: string;
  hint?: ReactNode;
  error?: string | undefined;
}

/** The attributes that tie a control to the label, hint and error around it. */
export interface ControlAttributes {
  id: string;
  'aria-invalid': true | undefined;
  'aria-describedby': string | undefined;
}

/**
 * The label, hint and API error around one form control, tied together for screen readers: one wrapper, so an input
 * (`Field`) and a select (`SelectField`) are announced alike.
 */
export function FieldFrame({
  label,
  hint,
  error,
  children,
}: FieldFrameProps & { children: (control: ControlAttributes) => ReactNode }) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy || undefined })}
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
