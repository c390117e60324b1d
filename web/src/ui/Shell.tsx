import { Link, Navigate, Outlet, useLocation, useNavigate } from '@tanstack/react-router';
import { session } from '../auth/session.ts';
import { useSession } from '../auth/use-session.ts';

/** The signed-in frame: skip link, navigation, sign-out; signed-out visitors go to the sign-in page. */
export function Shell() {
  const { signedIn, restored } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  if (!restored)
    return (
      <main className="auth">
        <p aria-live="polite">Loading…</p>
      </main>
    );
  if (!signedIn) return <Navigate to="/sign-in" search={{ next: location.href }} />;
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Infrastructure console</span>
        <nav aria-label="Main">
          <Link to="/" activeOptions={{ exact: true }}>
            Overview
          </Link>
          <Link to="/account">Account</Link>
        </nav>
        <button
          type="button"
          className="secondary"
          onClick={() => void session.signOut().then(() => navigate({ to: '/sign-in' }))}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}
