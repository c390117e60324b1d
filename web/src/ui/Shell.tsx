import { Link, Outlet, useLocation, useNavigate } from '@tanstack/react-router';
import { useEffect } from 'react';
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
  useEffect(() => {
    if (!signedIn) void navigate({ to: '/sign-in', search: { next: location.href } });
  }, [signedIn, navigate, location.href]);
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
