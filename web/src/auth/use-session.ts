import { useSyncExternalStore } from 'react';
import { session } from './session.ts';

/** Re-renders on sign-in, renewal and sign-out. */
export function useSession(): { signedIn: boolean; restored: boolean } {
  useSyncExternalStore(session.subscribe, session.snapshot);
  return { signedIn: session.signedIn(), restored: session.restored };
}
