import type { Kysely } from 'kysely'
import { assert, suite } from '../../tests/harness.ts'
import { openDatabase } from '../storage/database.ts'
import { keysetPage } from './pagination.ts'
import { preparedPage } from './prepared-page.ts'

const test = suite('control-plane/prepared-page')

interface Db {
  item: { id: string; kind: string; n: number }
}

const filtered = (db: Kysely<Db>, kind: string | undefined, min: number) => {
  const query = db.selectFrom('item').select(['id', 'kind', 'n']).where('n', '>=', min).where('id', '!=', 'excluded')
  return kind === undefined ? query : query.where('kind', '=', kind)
}

const order = [{ column: 'id', field: 'id', direction: 'asc' as const }]
const map = (row: { id: string; n: number }) => `${row.id}:${row.n}`

const page = preparedPage({
  scope: 'items',
  order,
  map,
  build: (db: Kysely<Db>, _shape, [kind, min]) => filtered(db, kind as string | undefined, min as number),
})

async function withItems(run: (db: Kysely<Db>) => Promise<void>): Promise<void> {
  const database = await openDatabase<Db>({ path: ':memory:', migrations: {} })
  try {
    const db = database.db
    await db.schema
      .createTable('item')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text')
      .addColumn('n', 'integer')
      .execute()
    const rows = Array.from({ length: 9 }, (_, i) => ({ id: `i${i}`, kind: i % 2 ? 'odd' : 'even', n: i }))
    await db
      .insertInto('item')
      .values([...rows, { id: 'excluded', kind: 'odd', n: 99 }])
      .execute()
    await run(db)
  } finally {
    await database.close()
  }
}

test('every page, with and without an optional filter, is the page keysetPage gives for the same query, cursors included', async () => {
  await withItems(async (db) => {
    for (const [kind, min] of [
      [undefined, 0],
      ['odd', 0],
      ['even', 3],
      ['none', 0],
    ] as const) {
      let cursor: string | undefined
      let pages = 0
      do {
        const direct = await keysetPage(filtered(db, kind, min), { scope: 'items', cursor, limit: 2, order, map })
        const prepared = await page(db, '', [kind, min], { cursor, limit: 2 })
        assert.equal(prepared, direct, `${kind} ${min} page ${pages + 1}`)
        cursor = prepared.nextCursor ?? undefined
        pages++
      } while (cursor && pages < 10)
      assert.ok(pages >= 1)
    }
  })
})

test("a prepared page refuses another filter's cursor, as keysetPage does", async () => {
  await withItems(async (db) => {
    const first = await page(db, '', ['odd', 0], { cursor: undefined, limit: 2 })
    assert.ok(first.nextCursor)
    // A refusal is thrown synchronously on SQLite's read connection, rejected on PostgreSQL.
    const error = await (async () => page(db, '', ['even', 0], { cursor: first.nextCursor!, limit: 2 }))().catch(
      (e) => e,
    )
    assert.is(error.code, 'invalid_cursor')
  })
})

test('a builder that turns a value into SQL instead of a parameter is refused when first prepared', async () => {
  await withItems(async (db) => {
    const wrong = preparedPage({
      scope: 'wrong',
      order,
      map,
      build: (db: Kysely<Db>, _shape, [kind]) =>
        db
          .selectFrom('item')
          .select(['id', 'n'])
          .where('kind', '=', String(kind).length > 0 ? 'odd' : 'even'),
    })
    const error = await (async () => wrong(db, '', ['odd'], { cursor: undefined, limit: 2 }))().catch((e) => e)
    assert.match(String(error), /must reach the query as a parameter/)
  })
})

test.run()
