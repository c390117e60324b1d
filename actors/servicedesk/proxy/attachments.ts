import { randomUUID } from 'node:crypto';
import { MAX_ATTACHMENT_BYTES } from '../../../contracts/domains/servicedesk-proxy.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { attachmentOut } from './outputs.ts';
import { logAction, READ, resolveTarget } from './target.ts';

const encoder = new TextEncoder();

/** A header parameter value with nothing that could end it early. */
// eslint-disable-next-line no-control-regex
const quoteSafe = (s: string): string => s.replace(/["\\\u0000-\u001f\u007f]/g, '_');
const asciiFallback = (s: string): string => quoteSafe(s).replace(/[^\u0020-\u007e]/g, '_');
/** A lone surrogate (a name cut in the middle of a pair) made U+FFFD: encodeURIComponent would throw on it. */
const wellFormed = (s: string): string =>
  s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

/**
 * The one-file multipart body the tracker's temporary-file step takes (part `file`), streamed: the head, the stored
 * bytes as they arrive, the tail. The name goes both as ASCII and RFC 5987 UTF-8 (`filename*`).
 */
export function multipartBody(
  file: ReadableStream<Uint8Array>,
  filename: string,
  contentType: string,
): { body: ReadableStream<Uint8Array>; contentType: string } {
  const boundary = `svc-${randomUUID().replaceAll('-', '')}`;
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${asciiFallback(filename)}"; filename*=UTF-8''${encodeURIComponent(wellFormed(filename))}\r\n` +
      `Content-Type: ${quoteSafe(contentType) || 'application/octet-stream'}\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const reader = file.getReader();
  let stage: 'head' | 'body' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 'head') {
        stage = 'body';
        controller.enqueue(head);
        return;
      }
      if (stage === 'done') return;
      const { value, done } = await reader.read();
      if (done) {
        stage = 'done';
        controller.enqueue(tail);
        controller.close();
        return;
      }
      controller.enqueue(value);
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Attachments: the gateway asks `prepare` (ownership and write permission, before it reads a byte of the upload),
 * streams the file into the upload store, then asks `add`, which streams it on through the tracker's temporary-file
 * step and attaches it to the request.
 */
export function attachmentHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.attachments.prepare': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, 'servicedesk:write', { deadline, signal });
      return {
        issue_key: t.issue_key,
        upload_id: randomUUID(),
        bucket: deps.uploads.bucket,
        max_bytes: MAX_ATTACHMENT_BYTES,
      };
    },

    'svc.servicedesk.attachments.add': async (
      { issue_key, upload_id, filename, content_type, public: isPublic },
      { ctx, deadline, signal },
    ) => {
      try {
        const api = trackerOf(deps);
        const t = await resolveTarget(deps, ctx, issue_key, 'servicedesk:write', { deadline, signal });
        const upload = await deps.uploads.open(upload_id);
        if (!upload)
          throw new DomainError(
            'bad_request',
            'the upload was not found (expired or already used); send the file again',
          );
        if (upload.size > MAX_ATTACHMENT_BYTES)
          throw new DomainError('request_too_large', 'attachments are at most 10 MB');
        const serviceDeskId = t.service_desk_id ?? (await api.request(t.issue_key, { deadline, signal })).serviceDeskId;
        if (!serviceDeskId)
          throw new DomainError(
            'bad_gateway',
            `the issue tracker did not tell the service desk of request ${t.issue_key}`,
          );
        const multipart = multipartBody(upload.data, filename, content_type);
        const temporary = await api.attachTemporaryFile(serviceDeskId, multipart.body, multipart.contentType, {
          deadline,
          signal,
        });
        const attached = await api.attach(t.issue_key, temporary, isPublic, { deadline, signal });
        await logAction(deps, ctx, t.issue_key, t.mapping, 'attachment', {
          filename,
          size: upload.size,
          public: isPublic,
          ...(t.asked !== t.issue_key ? { via: t.asked } : {}),
        });
        return { items: attached.map(attachmentOut) };
      } finally {
        await deps.uploads.delete(upload_id);
      }
    },
  };
}

/** The files attached to a request, as the tracker lists them. */
export function attachmentListHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.attachments.list': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      return { items: (await trackerOf(deps).attachments(t.issue_key, { deadline, signal })).map(attachmentOut) };
    },
  };
}
