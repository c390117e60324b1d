import { invoiceSubjects } from './domains/invoice.ts';

/**
 * The one map of the system: every request-reply subject, its request and reply schemas and its errors.
 * Gateways validate with these schemas, actors serve them, and the OpenAPI document is generated from them.
 */
export const catalogue = {
  ...invoiceSubjects,
} as const;

export type Cat = typeof catalogue;
