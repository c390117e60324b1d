import { useNavigate, useSearch } from '@tanstack/react-router';
import { can, useMe } from '../../auth/permissions.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Channels } from './Channels.tsx';
import { ClientPicker } from './ClientPicker.tsx';
import { NotificationList } from './NotificationList.tsx';
import { Rules } from './Rules.tsx';
import { Tabs } from './Tabs.tsx';
import { Windows } from './Windows.tsx';

const TABS = [
  { key: 'notifications', title: 'Notifications' },
  { key: 'channels', title: 'Channels' },
  { key: 'rules', title: 'Rules' },
  { key: 'windows', title: 'Maintenance windows' },
] as const;
type Tab = (typeof TABS)[number]['key'];

/**
 * A client's notifications, channels, rules and maintenance windows (docs/api/notifications.md). The client and the
 * tab are in the address, so a reload or a shared link opens the same view.
 */
export function Notifications() {
  const navigate = useNavigate();
  const search = useSearch({ strict: false }) as { client?: unknown; tab?: unknown };
  const clientId = typeof search.client === 'string' && search.client ? search.client : undefined;
  const tab: Tab = TABS.find((t) => t.key === search.tab)?.key ?? 'notifications';
  const me = useMe();
  const go = (client: string | undefined, to: Tab): void =>
    void navigate({ to: '/notifications', search: { client, tab: to }, replace: true });
  const reads = clientId !== undefined && can(me.data?.data, 'notifications:read', clientId);
  const writes = clientId !== undefined && can(me.data?.data, 'notifications:write', clientId);
  return (
    <>
      <h1>Notifications</h1>
      <ClientPicker value={clientId} onChange={(id) => go(id || undefined, tab)} />
      <ErrorNotice error={me.error} />
      {me.isPending && <p aria-live="polite">Loading your access…</p>}
      {!clientId ? (
        <p>Choose a client to see its notifications, channels, rules and maintenance windows.</p>
      ) : me.data && !reads ? (
        <p role="status">
          Your role on this client does not include reading notifications (<code>notifications:read</code>).
        </p>
      ) : (
        me.data && (
          // Keyed by client: a form half filled for one client is not sent for another.
          <Tabs
            key={clientId}
            label="Notification settings"
            tabs={TABS}
            selected={tab}
            onSelect={(t) => go(clientId, t)}
          >
            {!writes && (
              <p className="muted small">
                Read only: changing these needs <code>notifications:write</code> on this client.
              </p>
            )}
            {tab === 'notifications' && <NotificationList clientId={clientId} writes={writes} />}
            {tab === 'channels' && <Channels clientId={clientId} writes={writes} />}
            {tab === 'rules' && <Rules clientId={clientId} writes={writes} />}
            {tab === 'windows' && <Windows clientId={clientId} writes={writes} />}
          </Tabs>
        )
      )}
    </>
  );
}
