import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { ConfirmButton } from './ConfirmButton.tsx';
import { PagedTable } from './PagedTable.tsx';
import { useChannels, useEnvironments } from './queries.ts';
import { RULE_EVENTS } from './rule-events.tsx';
import { RuleForm } from './RuleForm.tsx';
import type { Channel, Rule } from './types.ts';
import { usePagedQuery } from './use-paged-query.ts';

/** A client's rules, newest first, each to enable, disable or delete; and a new one. */
export function Rules({ clientId, writes }: { clientId: string; writes: boolean }) {
  const rules = usePagedQuery(['notification-rules', clientId], (paging) =>
    api.GET('/api/v1/notification-rules', { params: { query: { client_id: clientId, ...paging } } }),
  );
  const channels = useChannels(clientId);
  const envs = useEnvironments(clientId);
  const channelList = channels.data?.data ?? [];
  // Only a complete list tells which channels are gone.
  const allChannels = channels.data && channels.data.meta.total <= channelList.length ? channelList : undefined;
  const envName = (id: string | null): string =>
    id === null ? 'whole client' : (envs.data?.data.find((e) => e.id === id)?.name ?? id);
  return (
    <section aria-labelledby="rules-title">
      <h2 id="rules-title">Rules</h2>
      {writes && <RuleForm clientId={clientId} />}
      <PagedTable
        query={rules.query}
        loading="Loading rules…"
        empty={<p>No rules yet.</p>}
        label="Rules table"
        caption="Notification rules of this client, newest first"
        columns={['Name', 'Event', 'Severity', 'Scope', 'Group window', 'Steps', 'State']}
        actions={writes}
        paging={rules.paging}
        pagerLabel="rules"
        row={(r) => (
          <tr key={r.id}>
            <th scope="row">{r.name}</th>
            <td>
              {RULE_EVENTS[r.event].title}
              <div className="muted small">{RULE_EVENTS[r.event].summary(r)}</div>
            </td>
            <td>{r.severity}</td>
            <td>
              {envName(r.environment_id)}
              {r.host_id && <div className="muted small">host {r.host_id}</div>}
            </td>
            <td>{r.group_window_minutes} min</td>
            <td>
              <ol className="steps">
                {r.steps.map((s, i) => (
                  <li key={i}>
                    {i === 0 ? 'at once' : `after ${s.after_minutes} min`}:{' '}
                    {s.channel_ids
                      .map((id) => channelList.find((c) => c.id === id)?.name ?? 'a deleted channel')
                      .join(', ')}
                  </li>
                ))}
              </ol>
            </td>
            <td>{r.enabled ? 'enabled' : 'disabled'}</td>
            {writes && (
              <td>
                <RuleActions rule={r} channels={allChannels} />
              </td>
            )}
          </tr>
        )}
      />
    </section>
  );
}

/**
 * Enable, disable, delete. A PUT replaces the whole rule, so it sends the rule as read with `enabled` turned (the API
 * ignores the read-only fields), less the ids of channels deleted since: a PUT naming one is refused.
 */
function RuleActions({ rule, channels }: { rule: Rule; channels: Channel[] | undefined }) {
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries({ queryKey: ['notification-rules', rule.client_id] });
  const toggle = useMutation({
    mutationFn: () => {
      const known = channels && new Set(channels.map((c) => c.id));
      const steps = rule.steps.map((s) => ({
        ...s,
        channel_ids: known ? s.channel_ids.filter((id) => known.has(id)) : s.channel_ids,
      }));
      return unwrap(
        api.PUT('/api/v1/notification-rules/{id}', {
          params: { path: { id: rule.id } },
          body: { ...rule, steps, enabled: !rule.enabled },
        }),
      );
    },
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/v1/notification-rules/{id}', { params: { path: { id: rule.id } } })),
    onSuccess: refresh,
  });
  return (
    <div className="row">
      <button
        type="button"
        className="secondary small"
        aria-label={`${rule.enabled ? 'Disable' : 'Enable'} the rule ${rule.name}`}
        onClick={() => toggle.mutate()}
        disabled={toggle.isPending}
      >
        {rule.enabled ? 'Disable' : 'Enable'}
      </button>
      <ConfirmButton
        label="Delete"
        question={`Delete the rule “${rule.name}”? Its open notifications end with it.`}
        confirm="Delete the rule"
        onConfirm={() => remove.mutate()}
        pending={remove.isPending}
        error={remove.error}
      />
      <ErrorNotice error={toggle.error} />
    </div>
  );
}
