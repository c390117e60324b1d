import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client.ts';
import { session } from './auth/session.ts';
import { router } from './router.tsx';
import './styles.css';

const queries = new QueryClient({
  defaultOptions: {
    // A refusal (4xx) is an answer, not a glitch: only network failures and 5xx are tried again.
    queries: { retry: (n, err) => n < 2 && !(err instanceof ApiError && err.status < 500), staleTime: 10_000 },
  },
});

// A reload keeps the session: the refresh cookie gives a new access token before the first signed-in page renders.
void session.renew();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
