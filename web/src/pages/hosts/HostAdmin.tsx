import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ApiError, unwrap } from '../../api/client.ts';
import { can, useMe } from '../../auth/permissions.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Field } from '../../ui/Field.tsx';
import { ActionForm } from '../../ui/ActionForm.tsx';

/** The user tags, editable with tags:write (`key=value` per line; the agent's labels are its own). */
export function TagsEditor({
  hostId,
  clientId,
  tags,
}: {
  hostId: string;
  clientId: string;
  tags: Record<string, unknown>;
}) {
  const qc = useQueryClient();
  const me = useMe().data?.data;
  const [text, setText] = useState<string | undefined>();
  const save = useMutation({
    mutationFn: () => {
      const next: Record<string, string> = {};
      for (const line of (text ?? '').split(',')) {
        const t = line.trim();
        if (!t) continue;
        const eq = t.indexOf('=');
        next[eq < 0 ? t : t.slice(0, eq).trim()] = eq < 0 ? '' : t.slice(eq + 1).trim();
      }
      return unwrap(api.PUT('/api/v1/hosts/{id}/tags', { params: { path: { id: hostId } }, body: { tags: next } }));
    },
    onSuccess: async () => {
      setText(undefined);
      await qc.invalidateQueries({ queryKey: ['host', hostId] });
    },
  });
  if (!can(me, 'tags:write', clientId)) return null;
  if (text === undefined)
    return (
      <button
        type="button"
        className="secondary small"
        onClick={() =>
          setText(
            Object.entries(tags)
              .map(([k, v]) => `${k}=${String(v)}`)
              .join(', '),
          )
        }
      >
        Edit tags
      </button>
    );
  return (
    <ActionForm className="card inline" aria-label="Tags" onAction={() => save.mutate()}>
      <Field
        label="Tags (key=value, separated by commas)"
        name="tags"
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      <ErrorNotice error={save.error} />
      <div className="row">
        <button type="submit" disabled={save.isPending}>
          Save the tags
        </button>
        <button type="button" className="secondary" onClick={() => setText(undefined)}>
          Cancel
        </button>
      </div>
    </ActionForm>
  );
}

/** The watch configuration the agent follows (none until one is set). */
export function WatchConfig({ hostId }: { hostId: string }) {
  const cfg = useQuery({
    queryKey: ['watch-config', hostId],
    retry: false,
    queryFn: () => unwrap(api.GET('/api/v1/hosts/{hostID}/watch-config', { params: { path: { hostID: hostId } } })),
  });
  const none = cfg.error instanceof ApiError && cfg.error.status === 404;
  return (
    <section aria-labelledby="watch-title">
      <h2 id="watch-title">Watch configuration</h2>
      {cfg.isPending && <p aria-live="polite">Loading…</p>}
      {none ? <p className="muted">No watch configuration set.</p> : <ErrorNotice error={cfg.error} />}
      {cfg.data && <pre>{JSON.stringify(cfg.data.data, null, 2)}</pre>}
    </section>
  );
}

/** Revoking the host's agent (its broker credentials at once), with agents:update, after a confirmation. */
export function AgentRevoke({
  agentId,
  clientId,
  hostId,
}: {
  agentId: string | null;
  clientId: string;
  hostId: string;
}) {
  const qc = useQueryClient();
  const me = useMe().data?.data;
  const [confirming, setConfirming] = useState(false);
  const revoke = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/v1/agents/{id}', { params: { path: { id: agentId ?? '' } } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['host', hostId] }),
  });
  if (!agentId || !can(me, 'agents:update', clientId)) return null;
  if (revoke.isSuccess) return <p role="status">The agent is revoked; its host reads offline from now on.</p>;
  return confirming ? (
    <div className="row" role="group" aria-label="Confirm the revocation">
      <span>Revoke this host's agent? It can no longer report until it is enrolled again.</span>
      <button type="button" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
        Revoke
      </button>
      <button type="button" className="secondary" onClick={() => setConfirming(false)}>
        Keep it
      </button>
      <ErrorNotice error={revoke.error} />
    </div>
  ) : (
    <button type="button" className="secondary small" onClick={() => setConfirming(true)}>
      Revoke the agent
    </button>
  );
}
