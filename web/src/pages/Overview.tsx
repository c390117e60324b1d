import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ApiError, unwrap } from '../api/client.ts';
import { can, useMe } from '../auth/permissions.ts';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';
import { Field } from '../ui/Field.tsx';
import { formatTime } from '../ui/time.ts';
import { ActionForm } from '../ui/ActionForm.tsx';
import { ShowMore } from '../ui/ShowMore.tsx';

/** The first page after sign-in: the clients the caller may see, their environments, and enrolling a host. */
export function Overview() {
  const qc = useQueryClient();
  const me = useMe().data?.data;
  // Paged as the API pages it: a fleet of many clients shows its first hundred, then more on request.
  const clients = useInfiniteQuery({
    queryKey: ['clients'],
    initialPageParam: 1,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/clients', { params: { query: { page: pageParam, per_page: 100, sort: 'name' } } })),
    getNextPageParam: (last) =>
      last.meta.page * last.meta.per_page < last.meta.total ? last.meta.page + 1 : undefined,
  });
  const list = clients.data?.pages.flatMap((p) => p.data) ?? [];
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const [justCreated, setJustCreated] = useState<{ id: string; name: string; slug: string } | undefined>();
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/clients', { body: { name, slug } })),
    onSuccess: async (created) => {
      setJustCreated(created.data);
      setName('');
      setSlug('');
      await qc.invalidateQueries({ queryKey: ['clients'] });
    },
  });
  const forbidden = clients.error instanceof ApiError && clients.error.status === 403;
  return (
    <>
      <h1>Overview</h1>
      <h2>Clients</h2>
      {can(me, 'clients:write') && (
        <ActionForm className="card inline" aria-label="New client" onAction={() => create.mutate()}>
          <h3>New client</h3>
          <Field
            label="Client name"
            name="client-name"
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            label="Client slug"
            name="client-slug"
            required
            hint="Lower-case letters, digits and dashes."
            value={slug}
            onChange={(e) => setSlug(e.target.value)}
          />
          <ErrorNotice error={create.error} />
          <button type="submit" disabled={create.isPending}>
            Create the client
          </button>
        </ActionForm>
      )}
      {clients.isPending && <p aria-live="polite">Loading clients…</p>}
      {forbidden ? <p>Your role does not include reading clients.</p> : <ErrorNotice error={clients.error} />}
      {justCreated && (
        // Where it sorts may be pages away: the client just made stays here, open, for its first environment.
        <section className="card inline" aria-label="The client just created">
          <details open>
            <summary>
              <strong>{justCreated.name}</strong> <span className="muted">{justCreated.slug}</span> (created)
            </summary>
            <Environments clientId={justCreated.id} />
          </details>
        </section>
      )}
      {clients.data && list.length === 0 && <p>No clients yet.</p>}
      {list.length > 0 && (
        <ul className="list" aria-label="Clients">
          {list.map((c) => (
            <li key={c.id}>
              <details>
                <summary>
                  <strong>{c.name}</strong> <span className="muted">{c.slug}</span>
                </summary>
                <Environments clientId={c.id} />
              </details>
            </li>
          ))}
        </ul>
      )}
      <ShowMore query={clients} label="Show more clients" />
    </>
  );
}

function Environments({ clientId }: { clientId: string }) {
  const qc = useQueryClient();
  const me = useMe().data?.data;
  const envs = useQuery({
    queryKey: ['environments', clientId],
    queryFn: () => unwrap(api.GET('/api/v1/clients/{id}/environments', { params: { path: { id: clientId } } })),
  });
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/clients/{id}/environments', { params: { path: { id: clientId } }, body: { name, slug } }),
      ),
    onSuccess: async () => {
      setName('');
      setSlug('');
      await qc.invalidateQueries({ queryKey: ['environments', clientId] });
    },
  });
  return (
    <div className="nested">
      <ErrorNotice error={envs.error} />
      {envs.data && envs.data.data.length === 0 && <p className="muted">No environments yet.</p>}
      <ul className="list" aria-label="Environments">
        {(envs.data?.data ?? []).map((e) => (
          <li key={e.id}>
            <strong>{e.name}</strong> <span className="muted">{e.slug}</span>
            {can(me, 'agents:update', clientId) && <InstallToken environmentId={e.id} />}
          </li>
        ))}
      </ul>
      {can(me, 'environments:write', clientId) && (
        <ActionForm aria-label="New environment" onAction={() => create.mutate()}>
          <div className="row">
            <Field
              label="Environment name"
              name="env-name"
              required
              value={name}
              onChange={(ev) => setName(ev.target.value)}
            />
            <Field
              label="Environment slug"
              name="env-slug"
              required
              value={slug}
              onChange={(ev) => setSlug(ev.target.value)}
            />
          </div>
          <ErrorNotice error={create.error} />
          <button type="submit" className="secondary" disabled={create.isPending}>
            Add the environment
          </button>
        </ActionForm>
      )}
    </div>
  );
}

/** A one-time install token, shown once, with the commands that enrol a host with it. */
function InstallToken({ environmentId }: { environmentId: string }) {
  const issue = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/environments/{id}/install-tokens', { params: { path: { id: environmentId } }, body: {} }),
      ),
  });
  const [copied, setCopied] = useState(false);
  if (!issue.data)
    return (
      <div>
        <button type="button" className="secondary small" onClick={() => issue.mutate()} disabled={issue.isPending}>
          Enrol a host
        </button>
        <ErrorNotice error={issue.error} />
      </div>
    );
  const command = [
    'dpkg -i svc-agent_*_amd64.deb',
    `runuser -u svc-agent -- svc-agent enroll --server ${window.location.origin} --token ${issue.data.data.token}`,
    'systemctl enable --now svc-agent',
  ].join('\n');
  return (
    <div className="card inline">
      <p>
        On the host, as root (the token works once, until {formatTime(issue.data.data.expires_at)}; it is not shown
        again):
      </p>
      <pre data-testid="enrol-command">{command}</pre>
      <p>Or, to try it on the machine that runs this system, from its checkout:</p>
      <pre data-testid="enrol-command-local">
        {[
          `npm run agent -- enroll --server ${window.location.origin} --token ${issue.data.data.token} --state-dir ./data/agent`,
          'npm run agent -- run --state-dir ./data/agent',
        ].join('\n')}
      </pre>
      <button
        type="button"
        className="secondary small"
        onClick={() => void navigator.clipboard.writeText(command).then(() => setCopied(true))}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
