import { useState } from 'react';
import { Field } from '../../ui/Field.tsx';

/** A webhook's signing secret, which the API answers once: read-only, selectable, with a copy button. */
export function SecretBox({ channel, secret, onDone }: { channel: string; secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState<boolean | undefined>();
  return (
    <section className="card inline secret" aria-label="Signing secret">
      <p>
        <strong>The signing secret of “{channel}”.</strong> It is shown this once: store it with the receiver now (it
        verifies the <code>webhook-signature</code> of every delivery).
      </p>
      <Field
        label="Signing secret"
        name="signing-secret"
        readOnly
        value={secret}
        className="mono"
        onFocus={(e) => e.currentTarget.select()}
        hint="Select it and copy it (Ctrl+C, or ⌘C), or press Copy."
      />
      <div className="row">
        <button
          type="button"
          className="secondary"
          onClick={() =>
            navigator.clipboard.writeText(secret).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          Copy
        </button>
        <button type="button" onClick={onDone}>
          I have stored it
        </button>
      </div>
      <p role="status" className="small">
        {copied === true ? 'Copied.' : copied === false ? 'The browser refused to copy: select it and copy it.' : ''}
      </p>
    </section>
  );
}
