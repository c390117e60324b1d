import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ActionForm } from '../../ui/ActionForm.tsx';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Field } from '../../ui/Field.tsx';
import { fieldErrors } from '../../ui/field-errors.ts';
import { formatTime } from '../../ui/time.ts';
import { KINDS } from './ChannelForm.tsx';
import { ConfirmButton } from './ConfirmButton.tsx';
import { attemptText, Deliveries } from './Deliveries.tsx';
import { useDeliveries } from './queries.ts';
import { SecretBox } from './SecretBox.tsx';
import type { Channel } from './types.ts';

const targetOf = (c: Channel): string =>
  c.kind === 'email' ? c.addresses.join(', ') : c.kind === 'voice' ? (c.phone ?? '—') : (c.url ?? '—');

/** A channel with what can be done to it: a test, a new secret (webhooks), enabling, deleting, its delivery log. */
export function ChannelItem({ channel: c, writes }: { channel: Channel; writes: boolean }) {
  const qc = useQueryClient();
  const titleId = useId();
  const [logOpen, setLogOpen] = useState(false);
  const refresh = () => qc.invalidateQueries({ queryKey: ['notification-channels', c.client_id] });
  const test = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/notification-channels/{id}/test', { params: { path: { id: c.id } } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['notification-deliveries', c.id] }),
  });
  const toggle = useMutation({
    // Only the name is required; the target stays as it is when absent (a chat URL is shown shortened, not sent).
    mutationFn: () =>
      unwrap(
        api.PUT('/api/v1/notification-channels/{id}', {
          params: { path: { id: c.id } },
          body: { name: c.name, enabled: !c.enabled },
        }),
      ),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/v1/notification-channels/{id}', { params: { path: { id: c.id } } })),
    onSuccess: refresh,
  });
  return (
    <article className="card inline" aria-labelledby={titleId}>
      <div className="row spread">
        <h3 id={titleId}>{c.name}</h3>
        <span>
          <span className="badge">{KINDS[c.kind].title}</span>
          <span className="badge">{c.enabled ? 'enabled' : 'disabled'}</span>
        </span>
      </div>
      <dl className="facts">
        <dt>Sends to</dt>
        <dd>{targetOf(c)}</dd>
        {c.kind === 'webhook' && (
          <>
            <dt>Signing secret</dt>
            <dd>
              {c.has_secret ? 'set' : 'none'}
              {c.previous_secret_expires_at &&
                `; the previous one signs too until ${formatTime(c.previous_secret_expires_at)}`}
            </dd>
          </>
        )}
      </dl>
      {writes && (
        <div className="row">
          <button type="button" className="secondary small" onClick={() => test.mutate()} disabled={test.isPending}>
            Send a test
          </button>
          <button type="button" className="secondary small" onClick={() => toggle.mutate()} disabled={toggle.isPending}>
            {c.enabled ? 'Disable' : 'Enable'}
          </button>
          <ConfirmButton
            label="Delete"
            question={`Delete the channel “${c.name}” and its delivery log? Rules stop sending to it.`}
            confirm="Delete the channel"
            onConfirm={() => remove.mutate()}
            pending={remove.isPending}
            error={remove.error}
          />
        </div>
      )}
      <ErrorNotice error={test.error ?? toggle.error} />
      {test.data && <TestResult channelId={c.id} deliveryId={test.data.data.id} />}
      {writes && c.kind === 'webhook' && <RotateSecret channel={c} />}
      <details onToggle={(e) => setLogOpen(e.currentTarget.open)}>
        <summary>Delivery log</summary>
        {logOpen && <Deliveries channelId={c.id} channelName={c.name} writes={writes} />}
      </details>
    </article>
  );
}

/** The outcome of a test, followed until it is known (the delivery is sent by a worker, with retries). */
function TestResult({ channelId, deliveryId }: { channelId: string; deliveryId: string }) {
  const log = useDeliveries(channelId, 1);
  const d = log.data?.data.find((x) => x.id === deliveryId);
  const last = d?.attempts[d.attempts.length - 1];
  let text: string;
  if (!d || d.status === 'pending') text = `sending…${last ? ` (last attempt: ${attemptText(last)})` : ''}`;
  else {
    const why = d.reason && d.status !== 'delivered' ? ` (${d.reason})` : '';
    text = `${d.status}${last ? `, ${attemptText(last)}` : ''}${why}.`;
  }
  return (
    <>
      <p role="status" className="test-result">
        Test delivery: {text}
      </p>
      <ErrorNotice error={log.error} />
    </>
  );
}

/** A new signing secret for a webhook, shown once; the previous one keeps signing for the overlap chosen. */
function RotateSecret({ channel }: { channel: Channel }) {
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const [hours, setHours] = useState('24');
  const rotate = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/notification-channels/{id}/rotate-secret', {
          params: { path: { id: channel.id } },
          body: { overlap_hours: Number(hours) },
        }),
      ),
    onSuccess: async () => {
      setOpen(false);
      await qc.invalidateQueries({ queryKey: ['notification-channels', channel.client_id] });
    },
  });
  const errors = fieldErrors(rotate.error, ['overlap_hours']);
  if (rotate.data?.data.secret)
    return <SecretBox channel={channel.name} secret={rotate.data.data.secret} onDone={() => rotate.reset()} />;
  if (!open)
    return (
      <button type="button" className="secondary small" onClick={() => setOpen(true)}>
        Rotate secret
      </button>
    );
  return (
    <ActionForm className="row" aria-label={`Rotate the secret of ${channel.name}`} onAction={() => rotate.mutate()}>
      <Field
        label="Hours the previous secret keeps signing"
        name="overlap-hours"
        type="number"
        min={0}
        max={168}
        required
        value={hours}
        onChange={(e) => setHours(e.target.value)}
        hint="0 to 168; 0 stops it at once."
        error={errors.of('overlap_hours')}
      />
      <button type="submit" disabled={rotate.isPending}>
        Rotate the secret
      </button>
      <button type="button" className="secondary" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <ErrorNotice error={errors.rest} />
    </ActionForm>
  );
}
