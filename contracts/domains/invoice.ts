import { z } from 'zod';
import { subjects } from '../subject.ts';

export const invoiceSubjects = subjects({
  'svc.invoice.health': {
    retry: 'safe',
    summary: 'Checks the stores the invoice actors depend on (the analytics store).',
    request: z.object({}),
    reply: z.object({ analytics_store: z.string() }),
    errors: [],
  },
});
