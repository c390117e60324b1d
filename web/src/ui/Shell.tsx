import { Link, Outlet, useLocation, useNavigate } from '@tanstack/react-router';
import { useEffect, useRef } from 'react';
import { session } from '../auth/session.ts';
import { useSession } from '../auth/use-session.ts';

/**
 * The signed-in frame: skip link, navigation, sign-out. The route lets only a signed-in visitor in (router.tsx); a
 * session that ends meanwhile (revoked elsewhere, expired) leads back to the sign-in page.
 */
export function Shell() {
  const { signedIn } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  // Read when the session ends, not a reason to run again: each navigation changes it.
  const here = useRef(location.href);
  here.current = location.href;
  const leaving = useRef(false);
  useEffect(() => {
    if (signedIn) return;
    // A sign-out goes to the sign-in page; a session that ended by itself comes back here after signing in again.
    void navigate({ to: '/sign-in', search: leaving.current ? {} : { next: here.current }, replace: true });
  }, [signedIn, navigate]);
  if (!signedIn) return null;
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
          <Link to="/hosts">Hosts</Link>
          <Link to="/notifications">Notifications</Link>
          <Link to="/account">Account</Link>
        </nav>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            leaving.current = true;
            void session.signOut();
          }}
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
