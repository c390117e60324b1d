import type { FormEvent, FormHTMLAttributes } from 'react';

/** A form whose submit runs `onAction` instead of navigating (every form of the console calls the API itself). */
export function ActionForm({
  onAction,
  ...form
}: { onAction: () => void } & Omit<FormHTMLAttributes<HTMLFormElement>, 'onSubmit'>) {
  return (
    <form
      {...form}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        onAction();
      }}
    />
  );
}
