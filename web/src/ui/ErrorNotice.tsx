import { ApiError } from '../api/client.ts';

/** A failure as the API worded it, with its request id (what a support request needs). */
export function ErrorNotice({ error }: { error: unknown }) {
  if (!error) return null;
  const api = error instanceof ApiError ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div role="alert" className="notice error">
      <p>{message}</p>
      {api?.requestId && (
        <p className="muted small">
          {api.code} · request id <code>{api.requestId}</code>
        </p>
      )}
    </div>
  );
}
