import {
  createRootRoute,
  createRoute,
  createRouter,
  lazyRouteComponent,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { session } from './auth/session.ts';
import { AcknowledgeNotification } from './pages/AcknowledgeNotification.tsx';
import { Account } from './pages/Account.tsx';
import { MfaSetup } from './pages/MfaSetup.tsx';
import { Overview } from './pages/Overview.tsx';
import { Host } from './pages/hosts/Host.tsx';
import { Hosts } from './pages/hosts/Hosts.tsx';
import { AcceptInvite, ForgotPassword, ResetPassword } from './pages/PasswordPages.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { SsoCallback } from './pages/SsoCallback.tsx';
import { Shell } from './ui/Shell.tsx';

const root = createRootRoute({ component: Outlet });
/** The pages the e-mails and the SSO flow link to keep these paths (docs/api/identity.md). */
const open = [
  createRoute({ getParentRoute: () => root, path: '/sign-in', component: SignIn }),
  createRoute({ getParentRoute: () => root, path: '/forgot-password', component: ForgotPassword }),
  createRoute({ getParentRoute: () => root, path: '/reset-password', component: ResetPassword }),
  createRoute({ getParentRoute: () => root, path: '/accept-invite', component: AcceptInvite }),
  createRoute({ getParentRoute: () => root, path: '/auth/sso/callback', component: SsoCallback }),
  createRoute({ getParentRoute: () => root, path: '/mfa/setup', component: MfaSetup }),
  createRoute({ getParentRoute: () => root, path: '/notifications/acknowledge', component: AcknowledgeNotification }),
];
const shell = createRoute({
  getParentRoute: () => root,
  id: 'signed-in',
  component: Shell,
  // A reload first tries the refresh cookie; without a session, the sign-in page, then back here.
  beforeLoad: async ({ location }) => {
    await session.whenRestored();
    if (!session.signedIn()) throw redirect({ to: '/sign-in', search: { next: location.href } });
  },
  pendingComponent: () => (
    <main className="auth">
      <p aria-live="polite">Loading…</p>
    </main>
  ),
});
const signedIn = [
  createRoute({ getParentRoute: () => shell, path: '/', component: Overview }),
  createRoute({ getParentRoute: () => shell, path: '/account', component: Account }),
  createRoute({ getParentRoute: () => shell, path: '/hosts', component: Hosts }),
  createRoute({ getParentRoute: () => shell, path: '/hosts/$hostId', component: Host }),
  // Loaded when first opened: what only some roles use stays out of the first page's bundle.
  createRoute({
    getParentRoute: () => shell,
    path: '/notifications',
    component: lazyRouteComponent(() => import('./pages/notifications/Notifications.tsx'), 'Notifications'),
    pendingComponent: () => <p aria-live="polite">Loading…</p>,
  }),
];

export const router = createRouter({
  routeTree: root.addChildren([...open, shell.addChildren(signedIn)]),
  defaultNotFoundComponent: () => (
    <main className="auth">
      <h1>Not found</h1>
      <p>
        There is no page at this address. <a href="/">Go to the overview</a>.
      </p>
    </main>
  ),
});

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
