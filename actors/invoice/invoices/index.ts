export { invoiceHandlers, type InvoiceDeps } from './handlers.ts';
