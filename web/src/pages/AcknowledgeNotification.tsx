import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { AuthCard } from '../ui/AuthCard.tsx';
import { ActionForm } from '../ui/ActionForm.tsx';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { queryParam } from '../ui/query-param.ts';

/**
 * Where the acknowledgement link of a notification's e-mail or chat message leads (docs/api/notifications.md): no
 * sign-in, the signed token is the permission. Acknowledging takes a button press, so a mail scanner that opens the
 * link does not acknowledge anything.
 */
export function AcknowledgeNotification() {
  const token = queryParam('token');
  const ack = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/notifications/acknowledge-link', { body: { token: token ?? '' } })),
  });
  const done = ack.data?.data;
  return (
    <AuthCard title="Acknowledge a notification">
      {done ? (
        <p role="status">
          {done.acknowledged_now ? 'Acknowledged' : 'It was acknowledged already'}: {done.title}. Its escalation has
          stopped ({new Date(done.acknowledged_at).toLocaleString()}).
        </p>
      ) : !token ? (
        <div role="alert" className="notice error">
          This link has no token. Open the link from the notification again.
        </div>
      ) : (
        <ActionForm aria-label="Acknowledge" onAction={() => ack.mutate()}>
          <p>Acknowledging tells everyone you are on it, and stops the notification from escalating further.</p>
          <ErrorNotice error={ack.error} />
          <button type="submit" disabled={ack.isPending}>
            {ack.isPending ? 'Acknowledging…' : 'Acknowledge'}
          </button>
        </ActionForm>
      )}
    </AuthCard>
  );
}
