import type { Kysely } from 'kysely'
import { assert, suite } from '../../tests/harness.ts'
import { openDatabase } from '../storage/database.ts'
import { preparedQuery } from './prepared-query.ts'

const test = suite('control-plane/prepared-query')

interface Db {
  item: { id: string; kind: string; n: number }
}

const byKind = preparedQuery((db: Kysely<Db>, kind: string, min: number) =>
  db
    .selectFrom('item')
    .select(['id', 'n'])
    .where('kind', '=', kind)
    .where('n', '>=', min)
    .where('id', '!=', 'excluded')
    .orderBy('id'),
)

test('a prepared query returns what the builder would, for each set of arguments, keeping literal parameters', async () => {
  const database = await openDatabase<Db>({ path: ':memory:', migrations: {} })
  try {
    const db = database.db
    await db.schema
      .createTable('item')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text')
      .addColumn('n', 'integer')
      .execute()
    await db
      .insertInto('item')
      .values([
        { id: 'a', kind: 'x', n: 1 },
        { id: 'b', kind: 'x', n: 5 },
        { id: 'c', kind: 'y', n: 9 },
        { id: 'excluded', kind: 'x', n: 9 },
      ])
      .execute()
    for (const [kind, min] of [
      ['x', 0],
      ['x', 2],
      ['y', 0],
      ['z', 0],
    ] as const) {
      const direct = await db
        .selectFrom('item')
        .select(['id', 'n'])
        .where('kind', '=', kind)
        .where('n', '>=', min)
        .where('id', '!=', 'excluded')
        .orderBy('id')
        .execute()
      assert.equal(await byKind(db, kind, min), direct, `${kind} ${min}`)
    }
  } finally {
    await database.close()
  }
})

test('an argument that does not reach the query as a parameter is refused at preparation', async () => {
  const database = await openDatabase<Db>({ path: ':memory:', migrations: {} })
  try {
    const transformed = preparedQuery((db: Kysely<Db>, kind: string) =>
      db.selectFrom('item').select('id').where('kind', '=', kind.toUpperCase()),
    )
    let message = ''
    try {
      await transformed(database.db, 'x')
    } catch (error) {
      message = (error as Error).message
    }
    assert.match(message, /every argument must appear/)
  } finally {
    await database.close()
  }
})

test.run()
