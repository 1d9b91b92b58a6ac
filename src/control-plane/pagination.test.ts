import { assert, suite } from '../../tests/harness.ts'
import { ApiError } from '../core/errors.ts'
import { newId } from '../core/ids.ts'
import { openDatabase } from '../storage/database.ts'
import { startAsyncTestPlane } from './testing/async-test-kit.ts'
import { decodeCursor, encodeCursor, keysetPage } from './pagination.ts'
import { buildFixtureOrg } from './testing/org-fixture.ts'

const test = suite('control-plane/pagination')

interface ThingDb {
  thing: { id: string; org_id: string; rank: number; updated_at: string }
}

async function withThings(
  fn: (db: Awaited<ReturnType<typeof openDatabase<ThingDb>>>['db'], ids: string[]) => Promise<void>,
) {
  const database = await openDatabase<ThingDb>({ path: ':memory:', migrations: {} })
  try {
    await database.db.schema
      .createTable('thing')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text')
      .addColumn('rank', 'integer')
      .addColumn('updated_at', 'text')
      .execute()
    await database.db.schema
      .createIndex('thing_org_updated')
      .on('thing')
      .columns(['org_id', 'updated_at', 'id'])
      .execute()
    const ids: string[] = []
    for (let i = 0; i < 37; i++) {
      const id = newId('thg')
      ids.push(id)
      // Three distinct timestamps, so the id tiebreaker decides most of the order.
      await database.db
        .insertInto('thing')
        .values({
          id,
          org_id: i % 5 === 0 ? 'other' : 'mine',
          rank: i,
          updated_at: `2026-01-0${1 + (i % 3)}T00:00:00.000Z`,
        })
        .execute()
    }
    await fn(database.db, ids)
  } finally {
    await database.close()
  }
}

async function all(
  db: Parameters<Parameters<typeof withThings>[0]>[0],
  limit: number,
  order: Parameters<typeof keysetPage>[1]['order'],
) {
  const seen: string[] = []
  let cursor: string | undefined
  let pages = 0
  for (;;) {
    const page = await keysetPage(db.selectFrom('thing').selectAll().where('org_id', '=', 'mine'), {
      scope: 'things',
      cursor,
      limit,
      order,
      map: (r) => r,
    })
    seen.push(...page.items.map((r) => r.id))
    pages++
    assert.ok(page.items.length <= limit)
    if (!page.nextCursor) break
    cursor = page.nextCursor
  }
  return { seen, pages }
}

test('a multi-column descending order pages through every row exactly once, in the same order as one query', async () => {
  await withThings(async (db) => {
    const order = [
      { column: 'updated_at', field: 'updated_at', direction: 'desc' as const },
      { column: 'id', field: 'id', direction: 'desc' as const },
    ]
    const expected = (
      await db
        .selectFrom('thing')
        .select('id')
        .where('org_id', '=', 'mine')
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
    ).map((r) => r.id)
    for (const limit of [1, 4, 7, 29, 100]) {
      const { seen, pages } = await all(db, limit, order)
      assert.equal(seen, expected, `limit ${limit}`)
      assert.is(pages, Math.max(1, Math.ceil(expected.length / limit)), 'no trailing empty page')
    }
  })
})

test('rows added behind the cursor do not disturb later pages of an ascending id order', async () => {
  await withThings(async (db, ids) => {
    const first = await keysetPage(db.selectFrom('thing').selectAll().where('org_id', '=', 'mine'), {
      scope: 'things',
      cursor: undefined,
      limit: 10,
      order: [{ column: 'id', field: 'id', direction: 'asc' }],
      map: (r) => r.id,
    })
    const added = newId('thg')
    await db
      .insertInto('thing')
      .values({ id: added, org_id: 'mine', rank: 99, updated_at: '2026-01-09T00:00:00.000Z' })
      .execute()
    const rest = await keysetPage(db.selectFrom('thing').selectAll().where('org_id', '=', 'mine'), {
      scope: 'things',
      cursor: first.nextCursor!,
      limit: 100,
      order: [{ column: 'id', field: 'id', direction: 'asc' }],
      map: (r) => r.id,
    })
    const mine = ids.filter((_, i) => i % 5 !== 0)
    assert.equal([...first.items, ...rest.items], [...mine, added])
  })
})

test('cursors are opaque, bound to their list and arity, and anything else is a 400', () => {
  const cursor = encodeCursor('members', ['mem_1'])
  assert.equal(decodeCursor('members', cursor, 1), ['mem_1'])
  const bad = (fn: () => unknown) => {
    try {
      fn()
      return null
    } catch (error) {
      return error instanceof ApiError ? `${error.status} ${error.code}` : 'other'
    }
  }
  assert.is(
    bad(() => decodeCursor('teams', cursor, 1)),
    '400 invalid_cursor',
  )
  assert.is(
    bad(() => decodeCursor('members', cursor, 2)),
    '400 invalid_cursor',
  )
  assert.is(
    bad(() => decodeCursor('members', 'not base64!', 1)),
    '400 invalid_cursor',
  )
  assert.is(
    bad(() => decodeCursor('members', encodeCursor('members', [{ nested: true } as never]), 1)),
    '400 invalid_cursor',
  )
})

test('a cursor is bound to the organization and filters of the query that issued it, not to the clock', async () => {
  await withThings(async (db) => {
    const page = (org: string, minRank: number | null, cursor?: string, at = '2026-01-01T00:00:00.000Z') => {
      let q = db.selectFrom('thing').selectAll().where('org_id', '=', org).where('updated_at', '>', at)
      if (minRank !== null) q = q.where('rank', '>=', minRank)
      return keysetPage(q, {
        scope: 'things',
        cursor,
        limit: 2,
        order: [{ column: 'id', field: 'id', direction: 'asc' }],
        map: (r) => r.id,
      })
    }
    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 'ok',
        (error) => (error instanceof ApiError ? `${error.status} ${error.code}` : String(error)),
      )
    const first = await page('mine', null)
    assert.ok(first.nextCursor)
    assert.is(await status(page('mine', null, first.nextCursor!)), 'ok')
    assert.is(await status(page('other', null, first.nextCursor!)), '400 invalid_cursor', 'another organization')
    assert.is(await status(page('mine', 3, first.nextCursor!)), '400 invalid_cursor', 'another filter')
    const filtered = await page('mine', 3)
    assert.is(await status(page('mine', 4, filtered.nextCursor!)), '400 invalid_cursor', 'another filter value')
    assert.is(await status(page('mine', null, filtered.nextCursor!)), '400 invalid_cursor', 'the filter dropped')
    // A cursor from a version that did not bind cursors yet (rolling upgrade) is still accepted.
    assert.is(await status(page('mine', null, encodeCursor('things', [first.items[1]!]))), 'ok')
    // "Now" moves between pages of a time-filtered list; that is the same list.
    assert.is(await status(page('mine', null, first.nextCursor!, '2026-01-01T00:00:05.123Z')), 'ok')
  })
})

test('every paged list route refuses a cursor from another organization, and a filtered list one from another filter, with 400 invalid_cursor', async () => {
  const t = await startAsyncTestPlane()
  try {
    const a = await buildFixtureOrg(t.client, 'cursor-a')
    const b = await buildFixtureOrg(t.client, 'cursor-b')
    const lists = t.app.contract.routes.filter(
      (r) =>
        r.method === 'GET' && !r.path.includes(':') && r.query && 'cursor' in (r.query as { entries: object }).entries,
    )
    const checked: string[] = []
    for (const route of lists) {
      const first = await t.client.get(`${route.path}?limit=1`, { token: a.owner.token })
      if (first.status !== 200 || !first.body.nextCursor) continue
      const cursor = encodeURIComponent(first.body.nextCursor)
      const same = await t.client.get(`${route.path}?limit=1&cursor=${cursor}`, { token: a.owner.token })
      assert.is(same.status, 200, `${route.path}: its own cursor works`)
      const crossed = await t.client.get(`${route.path}?limit=1&cursor=${cursor}`, { token: b.owner.token })
      assert.equal([crossed.status, crossed.body.code], [400, 'invalid_cursor'], `${route.path} under another org`)
      checked.push(route.path)
    }
    // Members, invitations, API keys and the audit log always have more than one row in a fixture org.
    for (const path of ['/v1/members', '/v1/invitations', '/v1/api-keys', '/v1/audit-events'])
      assert.ok(checked.includes(path), `${path} was checked (checked: ${checked.join(', ')})`)
    const audit = await t.client.get('/v1/audit-events?limit=1', { token: a.owner.token })
    const filtered = await t.client.get(
      `/v1/audit-events?limit=1&action=member.invited&cursor=${encodeURIComponent(audit.body.nextCursor)}`,
      { token: a.owner.token },
    )
    assert.equal([filtered.status, filtered.body.code], [400, 'invalid_cursor'])
    const invitations = await t.client.get('/v1/invitations?limit=1&status=accepted', { token: a.owner.token })
    const other = await t.client.get(
      `/v1/invitations?limit=1&status=canceled&cursor=${encodeURIComponent(invitations.body.nextCursor)}`,
      { token: a.owner.token },
    )
    assert.equal([other.status, other.body.code], [400, 'invalid_cursor'])
  } finally {
    await t.close()
  }
})

test.run()
