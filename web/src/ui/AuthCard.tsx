import type { ReactNode } from 'react';

/** The frame of the pages before sign-in: one card, one heading. */
export function AuthCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth">
      <section className="card" aria-labelledby="auth-title">
        <p className="brand">Infrastructure console</p>
        <h1 id="auth-title">{title}</h1>
        {children}
      </section>
    </main>
  );
}
