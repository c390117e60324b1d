import type { NatsConnection } from '@nats-io/transport-node';
import nodemailer from 'nodemailer';
import { EmailSend } from '../../contracts/streams.ts';
import type { Config } from '../../platform/config.ts';
import { NonRetryableError, publishDurable, runConsumer, type ConsumerHandle } from '../../platform/jetstream.ts';
import type { Logger } from '../../platform/logger.ts';
import type { IdentityDeps } from './deps.ts';

/**
 * E-mail: producers enqueue on the JetStream work subject `svc.work.email.send` (acked by the stream, so a mail
 * survives a crash), and the e-mail worker below sends each one with retries and backoff, dead-lettering a mail only
 * after its last attempt. Senders: the hosted provider (SVC_EMAIL_PROVIDER=resend with SVC_RESEND_API_KEY), SMTP
 * (SVC_SMTP_HOST), or, when neither is configured, the log.
 */

export type EmailTransportKind = 'resend' | 'smtp' | 'log';

export function emailTransportKind(config: Config): EmailTransportKind {
  if (config.SVC_EMAIL_PROVIDER === 'resend' && config.SVC_RESEND_API_KEY) return 'resend';
  if (config.SVC_SMTP_HOST) return 'smtp';
  if (config.SVC_RESEND_API_KEY) return 'resend';
  return 'log';
}

/** True when mails really leave the system (admin reset needs it); false when they are only logged. */
export const emailSenderConfigured = (config: Config): boolean => emailTransportKind(config) !== 'log';

/** Queues one e-mail for the worker; resolves once JetStream has stored it. */
export async function enqueueEmail(nc: NatsConnection, msg: EmailSend, opts: { msgId?: string } = {}): Promise<void> {
  await publishDurable(nc, 'svc.work.email.send', msg, opts.msgId ? { msgId: opts.msgId } : {});
}

type MailDeps = Pick<IdentityDeps, 'config' | 'nc'>;
interface Recipient {
  email: string;
  display_name?: string | null;
}

const frontendLink = (config: Config, path: string, token: string): string =>
  `${config.SVC_FRONTEND_URL.replace(/\/+$/, '')}${path}?token=${encodeURIComponent(token)}`;

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

function layout(
  greeting: string,
  paragraphs: string[],
  link: { href: string; label: string } | null,
  footer: string,
): { text: string; html: string } {
  const text = [greeting, '', ...paragraphs, '', ...(link ? [link.href, ''] : []), footer].join('\n');
  const html = [
    `<p>${escapeHtml(greeting)}</p>`,
    ...paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(link ? [`<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></p>`] : []),
    `<p style="color:#666;font-size:12px">${escapeHtml(footer)}</p>`,
  ].join('\n');
  return { text, html };
}

/** The invitation mail with its accept link (`${SVC_FRONTEND_URL}/accept-invite?token=...`, valid 24 hours). */
export async function sendInvitation(deps: MailDeps, user: Recipient, rawToken: string): Promise<void> {
  const product = deps.config.SVC_EMAIL_FROM_NAME;
  const href = frontendLink(deps.config, '/accept-invite', rawToken);
  const body = layout(
    `Hello${user.display_name ? ` ${user.display_name}` : ''},`,
    [
      `You have been invited to ${product}.`,
      'Open the link below to choose a password and activate your account. The link is valid for 24 hours and can be used once.',
    ],
    { href, label: 'Accept the invitation' },
    'If you did not expect this invitation, you can ignore this e-mail.',
  );
  await enqueueEmail(deps.nc, { to: user.email, subject: `You are invited to ${product}`, kind: 'invite', ...body });
}

/** The password-reset mail with its link (`${SVC_FRONTEND_URL}/reset-password?token=...`, valid 1 hour). */
export async function sendPasswordReset(deps: MailDeps, user: Recipient, rawToken: string): Promise<void> {
  const product = deps.config.SVC_EMAIL_FROM_NAME;
  const href = frontendLink(deps.config, '/reset-password', rawToken);
  const body = layout(
    `Hello${user.display_name ? ` ${user.display_name}` : ''},`,
    [
      `A password reset was requested for your ${product} account.`,
      'Open the link below to choose a new password. The link is valid for 1 hour and can be used once; signing in elsewhere is ended when the password is reset.',
    ],
    { href, label: 'Reset your password' },
    'If you did not ask for this, you can ignore this e-mail: your password stays as it is.',
  );
  await enqueueEmail(deps.nc, {
    to: user.email,
    subject: `Reset your ${product} password`,
    kind: 'password_reset',
    ...body,
  });
}

/**
 * The notice after a password change or reset: no link in it (a mail that asks to click after a security event is
 * what phishing looks like), only what happened, when, from where, and what to do if it was not the owner.
 */
export async function sendPasswordChanged(
  deps: MailDeps,
  user: Recipient,
  how: 'changed' | 'reset',
  at: Date,
  ip: string | undefined,
): Promise<void> {
  const product = deps.config.SVC_EMAIL_FROM_NAME;
  const when = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const body = layout(
    `Hello${user.display_name ? ` ${user.display_name}` : ''},`,
    [
      `The password of your ${product} account was ${how === 'reset' ? 'reset with a reset link' : 'changed'} on ${when}${ip ? ` from ${ip}` : ''}.${how === 'reset' ? ' Every session was signed out.' : ''}`,
      `If this was you, there is nothing to do. If it wasn't, reset your password at once with "Forgot password" on the sign-in page, and tell your administrator.`,
    ],
    null,
    'This notice is sent after every password change and cannot be turned off.',
  );
  await enqueueEmail(deps.nc, {
    to: user.email,
    subject: `Your ${product} password was ${how}`,
    kind: 'password_changed',
    ...body,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Worker

type Sender = (mail: EmailSend, log: Logger) => Promise<void>;

function fromHeader(config: Config): string {
  // Quotes inside the display name would break the header; the address itself comes from configuration.
  return `"${config.SVC_EMAIL_FROM_NAME.replace(/["\\\r\n]/g, '')}" <${config.SVC_EMAIL_FROM}>`;
}

/** Every mail is machine-made: RFC 3834 asks auto-responders (vacation replies, ticket robots) not to answer it. */
const AUTO_HEADERS = { 'Auto-Submitted': 'auto-generated' } as const;

/**
 * The name the client gives in EHLO: SVC_SMTP_EHLO_NAME, else the host of SVC_FRONTEND_URL when it is a domain
 * name, else the domain of SVC_EMAIL_FROM. Receiving servers score a bare address literal such as `[127.0.0.1]`
 * (nodemailer's fallback when the machine's host name has no dot) as a spam signal.
 */
export function ehloName(
  config: Pick<Config, 'SVC_SMTP_EHLO_NAME' | 'SVC_FRONTEND_URL' | 'SVC_EMAIL_FROM'>,
): string | undefined {
  if (config.SVC_SMTP_EHLO_NAME) return config.SVC_SMTP_EHLO_NAME;
  const isDomainName = (h: string): boolean => h.includes('.') && !/^[\d.]+$/.test(h) && !h.startsWith('[');
  const frontendHost = new URL(config.SVC_FRONTEND_URL).hostname;
  if (isDomainName(frontendHost)) return frontendHost;
  const fromDomain = config.SVC_EMAIL_FROM.slice(config.SVC_EMAIL_FROM.lastIndexOf('@') + 1).toLowerCase();
  return isDomainName(fromDomain) ? fromDomain : undefined;
}

function smtpSender(config: Config): Sender {
  const name = ehloName(config);
  const transport = nodemailer.createTransport({
    host: config.SVC_SMTP_HOST,
    port: config.SVC_SMTP_PORT,
    ...(name ? { name } : {}),
    // 465 is implicit TLS; otherwise plain, upgraded with STARTTLS whenever the server offers it.
    secure: config.SVC_SMTP_PORT === 465,
    ...(config.SVC_SMTP_USERNAME
      ? { auth: { user: config.SVC_SMTP_USERNAME, pass: config.SVC_SMTP_PASSWORD ?? '' } }
      : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  return async (mail) => {
    try {
      await transport.sendMail({
        from: fromHeader(config),
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        ...(mail.html ? { html: mail.html } : {}),
        headers: AUTO_HEADERS,
      });
    } catch (err) {
      const responseCode = (err as { responseCode?: unknown }).responseCode;
      // 5xx is the server's permanent "no" (unknown recipient, rejected content): retrying cannot change it.
      if (typeof responseCode === 'number' && responseCode >= 500)
        throw new NonRetryableError(`SMTP ${responseCode}: ${(err as Error).message}`, { cause: err });
      throw err;
    }
  };
}

function resendSender(config: Config): Sender {
  const url = `${config.SVC_RESEND_URL.replace(/\/+$/, '')}/emails`;
  return async (mail) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${config.SVC_RESEND_API_KEY ?? ''}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: fromHeader(config),
        to: [mail.to],
        subject: mail.subject,
        text: mail.text,
        ...(mail.html ? { html: mail.html } : {}),
        headers: AUTO_HEADERS,
      }),
      signal: AbortSignal.timeout(15_000),
    });
    if (res.ok) return;
    const detail = (await res.text().catch(() => '')).slice(0, 300);
    // 4xx other than 429 means the request itself is wrong (bad address, bad key): retrying would not help.
    if (res.status >= 400 && res.status < 500 && res.status !== 429)
      throw new NonRetryableError(`e-mail provider answered ${res.status}: ${detail}`);
    throw new Error(`e-mail provider answered ${res.status}: ${detail}`);
  };
}

const logSender: Sender = async (mail, log) => {
  // No sender configured (development): the mail, links included, goes to the log instead.
  log.info(
    { to: mail.to, subject: mail.subject, kind: mail.kind, text: mail.text },
    'e-mail not sent (no sender configured); logged instead',
  );
};

export function buildSender(config: Config): Sender {
  const kind = emailTransportKind(config);
  return kind === 'smtp' ? smtpSender(config) : kind === 'resend' ? resendSender(config) : logSender;
}

/** The e-mail worker: one durable consumer of `svc.work.email.send` shared by every instance. */
export function startEmailWorker(deps: Pick<IdentityDeps, 'config' | 'nc' | 'log'>): Promise<ConsumerHandle> {
  const send = buildSender(deps.config);
  const kind = emailTransportKind(deps.config);
  const log = deps.log.child({ actor: 'identity-email', transport: kind });
  return runConsumer({
    nc: deps.nc,
    stream: 'SVC_WORK',
    durable: 'identity-email',
    filterSubjects: ['svc.work.email.send'],
    schema: EmailSend,
    maxDeliver: 8,
    backoffMs: [2_000, 10_000, 30_000, 60_000, 120_000, 300_000],
    ackWaitMs: 60_000,
    concurrency: 4,
    log,
    handler: async (mail, meta) => {
      await send(mail, meta.log);
      if (kind !== 'log') meta.log.info({ to: mail.to, kind: mail.kind }, 'e-mail sent');
    },
  });
}
