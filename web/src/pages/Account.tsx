import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { formatTime } from '../ui/time.ts';

/** The signed-in user and their sessions, each revocable. */
export function Account() {
  const qc = useQueryClient();
  const me = useQuery({ queryKey: ['me'], queryFn: () => unwrap(api.GET('/api/v1/auth/me')) });
  const sessions = useQuery({ queryKey: ['sessions'], queryFn: () => unwrap(api.GET('/api/v1/auth/sessions')) });
  const revoke = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/v1/auth/sessions/{id}', { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: ['sessions'] }),
  });
  return (
    <>
      <h1>Your account</h1>
      <ErrorNotice error={me.error} />
      {me.data && (
        <dl className="facts">
          <dt>Name</dt>
          <dd>{me.data.data.user.display_name}</dd>
          <dt>E-mail</dt>
          <dd>{me.data.data.user.email}</dd>
          <dt>Two-factor authentication</dt>
          <dd>{me.data.data.user.mfa_enabled ? 'on' : 'off'}</dd>
          <dt>Role</dt>
          <dd>
            {me.data.data.user.is_super_admin
              ? 'super admin'
              : `${Object.keys(me.data.data.client_access).length} client(s)`}
          </dd>
        </dl>
      )}
      <h2>Sessions</h2>
      {sessions.isPending && <p aria-live="polite">Loading sessions…</p>}
      <ErrorNotice error={sessions.error ?? revoke.error} />
      {sessions.data && sessions.data.data.length === 0 && <p>No active sessions.</p>}
      {sessions.data && sessions.data.data.length > 0 && (
        <table>
          <caption className="sr-only">Your active sessions</caption>
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Address</th>
              <th scope="col">Last active</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.data.data.map((s) => (
              <tr key={s.id}>
                <td>
                  {s.device_label ?? s.user_agent ?? 'unknown'}
                  {s.is_current && <span className="badge">this browser</span>}
                </td>
                <td>{s.ip_address ?? '—'}</td>
                <td>{formatTime(s.last_active_at)}</td>
                <td>{formatTime(s.expires_at)}</td>
                <td>
                  {!s.is_current && (
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => revoke.mutate(s.id)}
                      disabled={revoke.isPending}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
