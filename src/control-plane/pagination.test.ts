import { assert, suite } from '../../tests/harness.ts'
import { ApiError } from '../core/errors.ts'
import { newId } from '../core/ids.ts'
import { openDatabase } from '../storage/database.ts'
import { decodeCursor, encodeCursor, keysetPage } from './pagination.ts'

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

test.run()
