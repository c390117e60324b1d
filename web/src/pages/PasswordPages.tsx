import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, ApiError, unwrap } from '../api/client.ts';
import { session } from '../auth/session.ts';
import { AuthCard } from '../ui/AuthCard.tsx';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { Field } from '../ui/Field.tsx';
import { queryParam } from '../ui/query-param.ts';
import { ActionForm } from '../ui/ActionForm.tsx';

/** The password policy (docs/api/identity.md): length only; the API also refuses common and recent passwords. */
const MIN_LENGTH = 12;

/** The API's message for a field ("new_password: must be …") shown on that field, the rest above the form. */
function splitError(error: unknown, field: string): { field?: string; rest?: unknown } {
  if (error instanceof ApiError && error.message.startsWith(`${field}:`))
    return { field: error.message.slice(field.length + 1).trim() };
  return { rest: error };
}

function NewPassword({ value, onChange, error }: { value: string; onChange: (v: string) => void; error?: string }) {
  const short = value.length < MIN_LENGTH;
  return (
    <Field
      label="New password"
      name="new-password"
      type="password"
      autoComplete="new-password"
      required
      value={value}
      onChange={(e) => onChange(e.target.value)}
      error={error}
      hint={
        <span className={short ? 'rule' : 'rule met'}>
          {short
            ? `At least ${MIN_LENGTH} characters (${value.length} so far).`
            : `At least ${MIN_LENGTH} characters: met.`}{' '}
          Common and recently used passwords are refused.
        </span>
      }
    />
  );
}

export function ForgotPassword() {
  const [email, setEmail] = useState('');
  const send = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/auth/forgot-password', { body: { email } })),
  });
  return (
    <AuthCard title="Reset your password">
      {send.isSuccess ? (
        <p role="status">{send.data.data.message}</p>
      ) : (
        <ActionForm onAction={() => send.mutate()}>
          <Field
            label="E-mail"
            name="email"
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <ErrorNotice error={send.error} />
          <button type="submit" disabled={send.isPending}>
            Send the link
          </button>
        </ActionForm>
      )}
      <p>
        <Link to="/sign-in">Back to sign-in</Link>
      </p>
    </AuthCard>
  );
}

export function ResetPassword() {
  const token = queryParam('token');
  const [password, setPassword] = useState('');
  const reset = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/api/v1/auth/reset-password', { body: { token: token ?? '', new_password: password } })),
  });
  const err = splitError(reset.error, 'new_password');
  return (
    <AuthCard title="Choose a new password">
      {reset.isSuccess ? (
        <>
          <p role="status">{reset.data.data.message}</p>
          <p>
            <Link to="/sign-in">Sign in</Link>
          </p>
        </>
      ) : !token ? (
        <div role="alert" className="notice error">
          This link has no token. Open the link from the e-mail again, or ask for a new one.
        </div>
      ) : (
        <ActionForm onAction={() => reset.mutate()}>
          <NewPassword value={password} onChange={setPassword} error={err.field} />
          <ErrorNotice error={err.rest} />
          <button type="submit" disabled={reset.isPending}>
            Set the password
          </button>
        </ActionForm>
      )}
    </AuthCard>
  );
}

export function AcceptInvite() {
  const navigate = useNavigate();
  const token = queryParam('token');
  const [password, setPassword] = useState('');
  const accept = useMutation({
    mutationFn: async () => {
      const data = await unwrap(
        api.POST('/api/v1/auth/browser/accept-invite', { body: { token: token ?? '', password } }),
      );
      session.accept(data.data);
      await navigate({ to: '/mfa/setup' });
    },
  });
  const err = splitError(accept.error, 'password');
  return (
    <AuthCard title="Accept your invitation">
      {!token ? (
        <div role="alert" className="notice error">
          This link has no token. Open the link from the invitation e-mail again.
        </div>
      ) : (
        <ActionForm onAction={() => accept.mutate()}>
          <p>Choose the password for your account. Two-factor authentication comes next.</p>
          <NewPassword value={password} onChange={setPassword} error={err.field} />
          <ErrorNotice error={err.rest} />
          <button type="submit" disabled={accept.isPending}>
            Activate my account
          </button>
        </ActionForm>
      )}
    </AuthCard>
  );
}
