import { useState } from 'react';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';

/** A destructive action behind a second press: the first asks, naming what goes, the second does it. */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
  pending,
  error,
}: {
  /** The first button, e.g. `Delete`. */
  label: string;
  question: string;
  /** The button that does it, e.g. `Delete the channel`. */
  confirm: string;
  onConfirm: () => void;
  pending: boolean;
  error: unknown;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" className="secondary small" onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <div className="row confirm" role="group" aria-label={question}>
      <span>{question}</span>
      <button type="button" className="small" onClick={onConfirm} disabled={pending}>
        {confirm}
      </button>
      <button type="button" className="secondary small" onClick={() => setAsking(false)}>
        Keep it
      </button>
      <ErrorNotice error={error} />
    </div>
  );
}
