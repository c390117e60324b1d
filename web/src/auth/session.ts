/**
 * The signed-in session as the console holds it (docs/console.md → Authentication): the access token in memory
 * only, the refresh token in an httpOnly cookie this code never sees, renewed silently a minute before the access
 * token expires, and after a reload, from the cookie. Renewal and sign-out send the CSRF cookie's value as a header.
 */
export interface BrowserTokens {
  access_token: string;
  session_id: string;
  token_type: 'Bearer';
  expires_in: number;
}

const CSRF_COOKIE = 'svc_csrf';
const CSRF_HEADER = 'x-csrf-token';
const BROWSER = '/api/v1/auth/browser';
/** Renewed this long before it expires, so a slow call never carries an expired token. */
const EARLY_MS = 60_000;

function csrfToken(): string | undefined {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === CSRF_COOKIE) return rest.join('=') || undefined;
  }
  return undefined;
}

type Listener = () => void;

class Session {
  private token: string | undefined;
  private expiresAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private renewing: Promise<boolean> | undefined;
  private readonly listeners = new Set<Listener>();
  /** Whether the page has tried the cookie yet (a reload starts signed out until it has). */
  restored = false;

  subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
  signedIn = (): boolean => this.token !== undefined;

  /** Takes the tokens of a sign-in, an MFA step, an invitation or an SSO exchange. */
  accept(tokens: BrowserTokens): void {
    this.token = tokens.access_token;
    this.expiresAt = Date.now() + tokens.expires_in * 1000;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.renew(), Math.max(1000, tokens.expires_in * 1000 - EARLY_MS));
    this.restored = true;
    this.emit();
  }

  /** A valid access token, renewed first when it is about to expire; undefined when signed out. */
  async accessToken(): Promise<string | undefined> {
    if (this.token && Date.now() < this.expiresAt - EARLY_MS / 2) return this.token;
    if (!csrfToken()) return this.token;
    await this.renew();
    return this.token;
  }

  /** Renews from the cookie; false (and signed out) when there is no session left. One renewal at a time. */
  renew(): Promise<boolean> {
    this.renewing ??= this.renewOnce().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  /** Resolves once the page has tried its cookie (at once when it already has). */
  async whenRestored(): Promise<void> {
    if (!this.restored) await this.renew();
  }

  private async renewOnce(): Promise<boolean> {
    try {
      const csrf = csrfToken();
      if (!csrf) return this.end();
      const res = await fetch(`${BROWSER}/refresh`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { [CSRF_HEADER]: csrf },
      });
      if (!res.ok) return this.end();
      const body = (await res.json()) as { data: BrowserTokens };
      this.accept(body.data);
      return true;
    } catch {
      // The network, not the session: keep what we have, the next call tries again.
      return this.token !== undefined;
    } finally {
      if (!this.restored) {
        this.restored = true;
        this.emit();
      }
    }
  }

  async signOut(): Promise<void> {
    const csrf = csrfToken();
    const token = await this.accessToken().catch(() => undefined);
    if (csrf && token)
      await fetch(`${BROWSER}/logout`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { [CSRF_HEADER]: csrf, authorization: `Bearer ${token}` },
      }).catch(() => undefined);
    this.end();
  }

  private end(): false {
    this.token = undefined;
    this.expiresAt = 0;
    clearTimeout(this.timer);
    this.emit();
    return false;
  }

  private version = 0;
  /** Changes whenever the session does (for useSyncExternalStore). */
  snapshot = (): number => this.version;

  private emit(): void {
    this.version++;
    for (const l of this.listeners) l();
  }
}

export const session = new Session();
