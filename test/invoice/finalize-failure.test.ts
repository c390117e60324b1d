import { afterAll, beforeAll, expect, it } from 'vitest';
import { errorOf } from '../support/system.ts';
import { caller, data, expectStatus, startInvoiceFixture, type InvoiceFixture, type Json } from './support.ts';

// A system whose Chromium cannot start: the documented PDF failure, with no mock (a real launch that fails).
let fx: InvoiceFixture;
const call = caller(() => fx);
beforeAll(async () => {
  fx = await startInvoiceFixture({ SVC_CHROMIUM_PATH: '/nonexistent/chromium' });
});
afterAll(() => fx?.sys.stop());

it('a PDF failure is 500 INTERNAL_ERROR and leaves the invoice a draft, without a PDF or a history entry', async () => {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: fx.keys.tm }));
  const inv = data<Json & { id: string }>(await call('POST', '/api/v1/invoices/generate', preview));
  const res = await call('POST', `/api/v1/invoices/${inv.id}/finalize`);
  expectStatus(res, 500);
  expect(errorOf(res).code).toBe('INTERNAL_ERROR');
  expect(data(await call('GET', `/api/v1/invoices/${inv.id}`))).toMatchObject({ status: 'draft', version: 1 });
  expectStatus(await call('GET', `/api/v1/invoices/${inv.id}/pdf`), 404);
  expect(data<unknown[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`))).toEqual([]);
});
