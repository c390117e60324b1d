import { useQuery } from '@tanstack/react-query';
import { Navigate } from '@tanstack/react-router';
import { api, unwrap } from '../api/client.ts';
import { destinationAfterSignIn } from '../auth/after-sign-in.ts';
import { session } from '../auth/session.ts';
import { AuthCard } from '../ui/AuthCard.tsx';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { queryParam } from '../ui/query-param.ts';

/** Where the SSO callback lands (`?code=`, `?mfa_required=true&mfa_token=`, or `?error=`). */
export function SsoCallback() {
  const q = { code: queryParam('code'), error: queryParam('error'), mfa_token: queryParam('mfa_token') };
  const exchange = useQuery({
    queryKey: ['sso-exchange', q.code],
    enabled: q.code !== undefined,
    retry: false,
    staleTime: Infinity,
    queryFn: async () => {
      const data = await unwrap(api.POST('/api/v1/auth/browser/sso/exchange', { body: { code: q.code ?? '' } }));
      session.accept(data.data);
      return destinationAfterSignIn(undefined);
    },
  });
  if (q.error) return <Navigate to="/sign-in" search={{ sso_error: q.error }} />;
  if (q.mfa_token) return <Navigate to="/sign-in" search={{ mfa_token: q.mfa_token }} />;
  if (exchange.data) return <Navigate to={exchange.data} />;
  return (
    <AuthCard title="Signing you in">
      {exchange.isPending && q.code && <p aria-live="polite">Completing single sign-on…</p>}
      {!q.code && <ErrorNotice error={new Error('This address holds no sign-in code. Start the sign-in again.')} />}
      <ErrorNotice error={exchange.error} />
    </AuthCard>
  );
}
