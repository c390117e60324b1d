/**
 * The small part of npm `oidc-provider` (v9, untyped) that test/support/oidc-provider.ts uses. Only tests import it.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface AccountClaims {
    sub: string;
    [claim: string]: unknown;
  }

  export interface Account {
    accountId: string;
    claims(use: string, scope: string): Promise<AccountClaims> | AccountClaims;
  }

  export interface Interaction {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId?: string };
    grantId?: string;
  }

  export interface GrantInstance {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  /** The part of Koa's context the test provider's middleware reads and writes. */
  export interface KoaContext {
    path: string;
    method: string;
    body: unknown;
    get(header: string): string;
    oidc?: { body?: Record<string, unknown> };
  }

  export interface ProviderConfiguration {
    clients?: Record<string, unknown>[];
    clientAuthMethods?: string[];
    claims?: Record<string, string[] | null>;
    scopes?: string[];
    conformIdTokenClaims?: boolean;
    cookies?: { keys?: string[] };
    features?: Record<string, { enabled: boolean } & Record<string, unknown>>;
    pkce?: { required?: () => boolean };
    interactions?: { url?: (ctx: unknown, interaction: Interaction) => string | Promise<string> };
    findAccount?: (ctx: unknown, sub: string) => Promise<Account | undefined> | Account | undefined;
    loadExistingGrant?: (ctx: unknown) => Promise<unknown>;
    ttl?: Record<string, number>;
    renderError?: (
      ctx: { type: string; body: string },
      out: Record<string, string>,
      error: Error,
    ) => Promise<void> | void;
  }

  export class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    proxy: boolean;
    Grant: new (init: { accountId: string; clientId: string }) => GrantInstance;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      opts?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  }

  export default Provider;
}
