import { useMutation, useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import QRCode from 'qrcode';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { AuthCard } from '../ui/AuthCard.tsx';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { Field } from '../ui/Field.tsx';
import { ActionForm } from '../ui/ActionForm.tsx';
import { saveFile } from '../ui/save-file.ts';

/** Enrolment: a QR code of the otpauth:// URI and the secret as text, a code to confirm, then the recovery codes once. */
export function MfaSetup() {
  const navigate = useNavigate();
  const [code, setCode] = useState('');
  const setup = useQuery({
    queryKey: ['mfa-setup'],
    queryFn: async () => {
      const { data } = await unwrap(api.POST('/api/v1/auth/mfa/setup'));
      return { ...data, qr: await QRCode.toDataURL(data.qr_code_uri, { margin: 1, width: 220 }) };
    },
    staleTime: Infinity,
    gcTime: 0,
    retry: false,
    refetchOnWindowFocus: false,
  });
  const confirm = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/auth/mfa/confirm', { body: { code: code.trim() } })),
  });

  if (confirm.isSuccess && setup.data)
    return <RecoveryCodes codes={setup.data.recovery_codes} onDone={() => void navigate({ to: '/' })} />;
  return (
    <AuthCard title="Set up two-factor authentication">
      {setup.isPending && <p aria-live="polite">Preparing a secret…</p>}
      <ErrorNotice error={setup.error} />
      {setup.data && (
        <>
          <p>Scan this code with an authenticator app (any TOTP app), or type the secret into it.</p>
          <img className="qr" src={setup.data.qr} alt="QR code of the authenticator secret" width={220} height={220} />
          <p>
            Secret: <code data-testid="mfa-secret">{setup.data.secret}</code>
          </p>
          <ActionForm onAction={() => confirm.mutate()}>
            <Field
              label="6-digit code from the app"
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="\d{6}"
              required
              value={code}
              onChange={(e) => setCode(e.target.value)}
            />
            <ErrorNotice error={confirm.error} />
            <button type="submit" disabled={confirm.isPending}>
              Confirm
            </button>
          </ActionForm>
        </>
      )}
    </AuthCard>
  );
}

function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const text = `${codes.join('\n')}\n`;
  const download = (): void => {
    saveFile(new Blob([text], { type: 'text/plain' }), 'recovery-codes.txt');
  };
  return (
    <AuthCard title="Save your recovery codes">
      <p>
        Two-factor authentication is on. Each code below signs you in once if you lose your authenticator. They are
        shown only now.
      </p>
      <ul className="codes" data-testid="recovery-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <div className="row">
        <button
          type="button"
          className="secondary"
          onClick={() => void navigator.clipboard.writeText(text).then(() => setCopied(true))}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className="secondary" onClick={download}>
          Download
        </button>
        <button type="button" onClick={onDone}>
          I have saved them
        </button>
      </div>
    </AuthCard>
  );
}
