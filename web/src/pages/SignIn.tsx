import { useMutation, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useSearch } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { api, ApiError, unwrap } from '../api/client.ts';
import { destinationAfterSignIn } from '../auth/after-sign-in.ts';
import { session, type BrowserTokens } from '../auth/session.ts';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { Field } from '../ui/Field.tsx';
import { AuthCard } from '../ui/AuthCard.tsx';
import { ActionForm } from '../ui/ActionForm.tsx';
import { markOnce } from '../ui/timing.ts';

/** Why an SSO attempt came back without a session (the callback's `?error=`), in words. */
const SSO_ERRORS: Record<string, string> = {
  invalid_state: 'The sign-in took too long or was started in another browser. Try again.',
  access_denied: 'The identity provider did not allow the sign-in.',
  domain_not_allowed: 'Accounts of this domain may not sign in here.',
  email_not_verified: 'The identity provider has not verified this e-mail address.',
  account_not_found: 'There is no account for this identity. Ask an administrator to invite you.',
  account_disabled: 'This account is disabled.',
  account_not_active: 'This account is not active yet: accept its invitation first.',
};

export function SignIn() {
  const navigate = useNavigate();
  const search = useSearch({ strict: false }) as { next?: string; sso_error?: string; mfa_token?: string };
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [mfaToken, setMfaToken] = useState<string | undefined>(search.mfa_token);
  const [code, setCode] = useState('');
  const config = useQuery({ queryKey: ['auth-config'], queryFn: () => unwrap(api.GET('/api/v1/auth/config')) });
  useEffect(() => markOnce('console:sign-in-ready'), []);

  const signedIn = async (tokens: BrowserTokens): Promise<void> => {
    session.accept(tokens);
    await navigate({ to: await destinationAfterSignIn(search.next) });
  };
  const login = useMutation({
    mutationFn: async () => {
      const { data, error, response } = await api.POST('/api/v1/auth/browser/login', { body: { email, password } });
      if (error !== undefined || !data) throw new ApiError(response.status, error);
      if ('mfa_required' in data.data) setMfaToken(data.data.mfa_token);
      else await signedIn(data.data);
    },
  });
  const verify = useMutation({
    mutationFn: async () => {
      const body = { mfa_token: mfaToken ?? '', code: code.trim() };
      const data = await unwrap(api.POST('/api/v1/auth/browser/mfa/verify', { body }));
      await signedIn(data.data);
    },
  });

  if (mfaToken)
    return (
      <AuthCard title="Two-factor authentication">
        <ActionForm onAction={() => verify.mutate()}>
          <Field
            label="Code from your authenticator app, or a recovery code"
            name="code"
            autoComplete="one-time-code"
            inputMode="text"
            required
            autoFocus
            value={code}
            onChange={(e) => setCode(e.target.value)}
          />
          <ErrorNotice error={verify.error} />
          <button type="submit" disabled={verify.isPending}>
            {verify.isPending ? 'Checking…' : 'Verify'}
          </button>
          <button type="button" className="link" onClick={() => setMfaToken(undefined)}>
            Start over
          </button>
        </ActionForm>
      </AuthCard>
    );

  return (
    <AuthCard title="Sign in">
      {search.sso_error && (
        <div role="alert" className="notice error">
          {SSO_ERRORS[search.sso_error] ?? `Single sign-on failed (${search.sso_error}).`}
        </div>
      )}
      <ActionForm onAction={() => login.mutate()}>
        <Field
          label="E-mail"
          name="email"
          type="email"
          autoComplete="username"
          required
          autoFocus
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <ErrorNotice error={login.error} />
        <button type="submit" disabled={login.isPending}>
          {login.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </ActionForm>
      {config.data?.data.sso_enabled && (
        <p>
          <a className="button secondary" href="/api/v1/auth/sso">
            Sign in with single sign-on
          </a>
        </p>
      )}
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </AuthCard>
  );
}
