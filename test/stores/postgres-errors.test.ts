import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../../platform/deadline.ts';
import { createLogger } from '../../platform/logger.ts';
import { toReplyError } from '../../platform/serve.ts';
import { openOrm, TRANSACTION_ATTEMPTS, type MikroORM } from '../../platform/stores/postgres.ts';
import { testConfig } from '../support/env.ts';

/**
 * PostgreSQL refusals are answered for what they are, centrally: invalid input 400, a missing
 * reference 404 naming it, a row still referenced 409, a duplicate 409, check / not-null 400, and a transaction that
 * lost a race (deadlock, serialization failure) is run again a bounded number of times, then 409. Never 500 or 503.
 */

const log = createLogger('silent');
const config = testConfig();
const tag = randomUUID().slice(0, 8);
const parent = `rt_parent_${tag}`;
const child = `rt_child_${tag}`;
let orm: MikroORM;

const sql = (q: string, params: unknown[] = []): Promise<unknown> => orm.em.fork().execute(q, params);
/** What the runtime answers for the error `q` raises. */
const answer = async (q: string, params: unknown[] = []): Promise<{ code: string; message: string }> => {
  const err = await sql(q, params).then(
    () => expect.fail(`${q} did not fail`),
    (e: unknown) => e,
  );
  const d = toReplyError(err);
  return { code: d.code, message: d.message };
};

beforeAll(async () => {
  orm = await openOrm({ url: config.SVC_DB_URL, log });
  await sql(
    `CREATE TABLE ${parent} (id int PRIMARY KEY, name text NOT NULL, slug varchar(8) UNIQUE, n int CHECK (n >= 0))`,
  );
  await sql(`CREATE TABLE ${child} (id serial PRIMARY KEY, client_id int NOT NULL REFERENCES ${parent}(id))`);
  await sql(`INSERT INTO ${parent} (id, name, slug, n) VALUES (1, 'one', 'one', 1), (2, 'two', 'two', 2)`);
  await sql(`INSERT INTO ${child} (client_id) VALUES (1)`);
});

afterAll(async () => {
  await sql(`DROP TABLE IF EXISTS ${child}, ${parent}`).catch(() => undefined);
  await orm?.close();
});

describe('PostgreSQL refusals in the reply', () => {
  it('a NUL byte or another invalid input is 400, not 503', async () => {
    expect(await answer(`INSERT INTO ${parent} (id, name) VALUES (3, ?)`, ['a\u0000b'])).toMatchObject({
      code: 'bad_request',
    });
    expect(await answer(`SELECT ?::uuid`, ['not-a-uuid'])).toEqual({
      code: 'bad_request',
      message: 'a value has an invalid format',
    });
    expect(await answer(`INSERT INTO ${parent} (id, name, slug) VALUES (3, 'x', ?)`, ['much-too-long'])).toEqual({
      code: 'bad_request',
      message: 'a value is too long',
    });
    expect(await answer(`SELECT ?::int`, ['99999999999'])).toMatchObject({ code: 'bad_request' });
  });

  it('a missing reference is 404 naming the resource; removing a referenced row is 409', async () => {
    expect(await answer(`INSERT INTO ${child} (client_id) VALUES (42)`)).toEqual({
      code: 'not_found',
      message: 'client not found',
    });
    expect(await answer(`DELETE FROM ${parent} WHERE id = 1`)).toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('still in use'),
    });
  });

  it('a duplicate is 409 naming the key; not-null and check violations are 400', async () => {
    expect(await answer(`INSERT INTO ${parent} (id, name, slug) VALUES (5, 'x', 'one')`)).toEqual({
      code: 'conflict',
      message: 'slug: already exists',
    });
    expect(await answer(`INSERT INTO ${parent} (id, name) VALUES (6, NULL)`)).toEqual({
      code: 'bad_request',
      message: 'name: must not be null',
    });
    expect(await answer(`INSERT INTO ${parent} (id, name, n) VALUES (7, 'x', -1)`)).toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining(`${parent}_n_check`),
    });
  });
});

describe('transactions that lose a race', () => {
  it('a deadlock victim is run again and both transactions commit', async () => {
    let attempts = 0;
    let arrived = 0;
    const bothLocked = new Promise<void>((resolve) => {
      const check = setInterval(() => arrived >= 2 && (clearInterval(check), resolve()), 5);
    });
    const tx = (first: number, second: number) =>
      orm.em.fork().transactional(async (em) => {
        attempts++;
        await em.execute(`UPDATE ${parent} SET n = n + 1 WHERE id = ?`, [first]);
        // First attempts wait for each other, so each holds the row the other wants: a deadlock.
        if (attempts <= 2) {
          arrived++;
          await bothLocked;
        }
        await em.execute(`UPDATE ${parent} SET n = n + 1 WHERE id = ?`, [second]);
      });
    await expect(Promise.all([tx(1, 2), tx(2, 1)])).resolves.toBeDefined();
    expect(attempts).toBe(3);
  });

  it(`a serialization failure that keeps coming is tried ${TRANSACTION_ATTEMPTS} times, then answered 409`, async () => {
    let attempts = 0;
    const err = await orm.em
      .fork()
      .transactional(async () => {
        attempts++;
        throw Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' });
      })
      .catch((e: unknown) => e);
    expect(attempts).toBe(TRANSACTION_ATTEMPTS);
    expect(toReplyError(err).code).toBe('conflict');
  });

  it('does not repeat other failures, nor a race when the deadline is too close', async () => {
    let attempts = 0;
    await orm.em
      .fork()
      .transactional(async () => {
        attempts++;
        throw new Error('boom');
      })
      .catch(() => undefined);
    expect(attempts).toBe(1);
    attempts = 0;
    const ac = new AbortController();
    await runWithDeadline({ deadline: Date.now() + 200, signal: ac.signal }, () =>
      orm.em.fork().transactional(async () => {
        attempts++;
        throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      }),
    ).catch(() => undefined);
    expect(attempts).toBe(1);
  });
});
