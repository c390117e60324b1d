import { ErrorNotice } from '../../ui/ErrorNotice.tsx';

/**
 * The end of the tabs' "New …" forms: whether the new one starts enabled (channels and rules can be off), what of a
 * failed call no field showed, and the submit, held while the call runs.
 */
export function CreateFormFooter({
  enabled,
  error,
  pending,
  submit,
}: {
  enabled?: { value: boolean; onChange: (enabled: boolean) => void };
  /** The part of the error no field took (`fieldErrors(…).rest`). */
  error: unknown;
  pending: boolean;
  /** The submit button's text, e.g. `Create the rule`. */
  submit: string;
}) {
  return (
    <>
      {enabled && (
        <label className="check">
          <input type="checkbox" checked={enabled.value} onChange={(e) => enabled.onChange(e.target.checked)} /> Enabled
        </label>
      )}
      <ErrorNotice error={error} />
      <button type="submit" disabled={pending}>
        {submit}
      </button>
    </>
  );
}
