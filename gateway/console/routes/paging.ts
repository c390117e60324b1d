import type { FastifyReply } from 'fastify';

/** Actors answer lists as `{ items, total, page, per_page }`; the console envelope is `{ data, meta: { total, page, per_page } }`. */
export function sendPage<T>(page: { items: T[]; total: number; page: number; per_page: number }, reply: FastifyReply): FastifyReply {
  return reply.status(200).send({ data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } });
}
