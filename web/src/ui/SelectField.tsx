import type { SelectHTMLAttributes } from 'react';
import { FieldFrame, type FieldFrameProps } from './FieldFrame.tsx';

/** A labelled select with its hint and the API's error for it, tied together as `Field` ties an input. */
export function SelectField({
  label,
  hint,
  error,
  children,
  ...select
}: FieldFrameProps & SelectHTMLAttributes<HTMLSelectElement>) {
  return (
    <FieldFrame label={label} hint={hint} error={error}>
      {(control) => (
        <select {...control} {...select}>
          {children}
        </select>
      )}
    </FieldFrame>
  );
}
