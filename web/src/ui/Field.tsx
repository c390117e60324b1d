import type { InputHTMLAttributes } from 'react';
import { FieldFrame, type FieldFrameProps } from './FieldFrame.tsx';

/** A labelled input with its hint and the error the API gave for it, tied together for screen readers. */
export function Field({ label, hint, error, ...input }: FieldFrameProps & InputHTMLAttributes<HTMLInputElement>) {
  return (
    <FieldFrame label={label} hint={hint} error={error}>
      {(control) => <input {...control} {...input} />}
    </FieldFrame>
  );
}
