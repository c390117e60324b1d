import { useState } from 'react';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { ChannelForm } from './ChannelForm.tsx';
import { ChannelItem } from './ChannelItem.tsx';
import { useChannels } from './queries.ts';
import { SecretBox } from './SecretBox.tsx';
import type { CreatedChannel } from './types.ts';

/** A client's channels, newest first, and a new one (its webhook secret shown the one time the API answers it). */
export function Channels({ clientId, writes }: { clientId: string; writes: boolean }) {
  const channels = useChannels(clientId);
  const [created, setCreated] = useState<CreatedChannel | undefined>();
  const list = channels.data?.data ?? [];
  const total = channels.data?.meta.total ?? 0;
  return (
    <section aria-labelledby="channels-title">
      <h2 id="channels-title">Channels</h2>
      {writes && <ChannelForm clientId={clientId} onCreated={setCreated} />}
      {created?.secret && (
        <SecretBox channel={created.name} secret={created.secret} onDone={() => setCreated(undefined)} />
      )}
      {channels.isPending && <p aria-live="polite">Loading channels…</p>}
      <ErrorNotice error={channels.error} />
      {channels.data && list.length === 0 && <p>No channels yet.</p>}
      {total > list.length && (
        <p className="muted small">
          The newest {list.length} of {total} channels.
        </p>
      )}
      <div className="channels">
        {list.map((c) => (
          <ChannelItem key={c.id} channel={c} writes={writes} />
        ))}
      </div>
    </section>
  );
}
