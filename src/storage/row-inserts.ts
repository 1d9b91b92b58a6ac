/**
 * Several inserts sent as one statement where the engine allows it. A create on PostgreSQL writes
 * the object, its first version, its search terms, the creator's grant, the audit row and the
 * change-feed row: six round trips through the query builder, each costing the server and the
 * database more than the insert itself (measured with `bench/pg-profile.ts`). PostgreSQL accepts
 * data-modifying statements in `WITH`, all run under the statement's snapshot with foreign keys
 * checked at its end, so the six become one. SQLite runs in process, where a round trip costs
 * nothing; there the inserts run one after another in the caller's transaction.
 *
 * The SQL is built here from table and column names (fixed by the call sites, never from input)
 * and cached per shape, so a create compiles nothing after its first. A variable number of rows
 * that differ in one text column (search terms) is one fixed statement on both engines: the column
 * comes from `unnest` of an array on PostgreSQL and from `json_each` of a JSON array on SQLite,
 * so the statement text, and the prepared statement behind it, does not change with the count.
 * @module
 */
import { CompiledQuery, type Kysely } from 'kysely'
import { engineOf } from './database.ts'

/**
 * Rows for one table: one row as given, or one row per element of `each.values`, with `shared`
 * in the other columns. Column names are the keys; they come from code, never from input.
 */
export type RowInsert =
  | { table: string; row: object }
  | {
      table: string
      shared: object
      /** A text column that takes each value in turn (PostgreSQL casts the array to `text[]`). */
      each: { column: string; values: readonly string[] }
    }

/** A statement prefix of `WITH` items and its parameters, for {@link withInserts}. */
export interface InsertPrefix {
  /** `name as (insert … returning 1), …` without `with` and without a trailing comma; empty when no rows. */
  items: string
  /** The items' names (`w0`, `w1`, …): a statement that selects from them runs them first. */
  names: string[]
  parameters: unknown[]
}

type Engine = 'sqlite' | 'postgres'

const MAX_SHAPES = 256
const shapes = new Map<string, string>()

/** Double-quoted identifier, valid on both engines. */
function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/**
 * One insert's SQL, its placeholders numbered from `first` on PostgreSQL (`?` on SQLite, in the
 * parameters' order), cached per engine, table, columns and first number: a call site puts the
 * same shape at the same place in its statement, so each is built once.
 */
function insertText(engine: Engine, insert: RowInsert, first: number): string {
  const columns = Object.keys('row' in insert ? insert.row : insert.shared)
  const key = `${engine}|${insert.table}|${columns.join(',')}|${'each' in insert ? insert.each.column : ''}|${first}`
  const cached = shapes.get(key)
  if (cached !== undefined) return cached
  const slot = (i: number) => (engine === 'postgres' ? `$${first + i}` : '?')
  const values = columns.map((_, i) => slot(i))
  let text: string
  if ('row' in insert) {
    text = `insert into ${quote(insert.table)} (${columns.map(quote).join(', ')}) values (${values.join(', ')})`
  } else {
    const list = slot(columns.length)
    const selected =
      engine === 'postgres'
        ? `select ${[...values, `unnest(${list}::text[])`].join(', ')}`
        : `select ${[...values, 'value'].join(', ')} from json_each(${list})`
    text = `insert into ${quote(insert.table)} (${[...columns, insert.each.column].map(quote).join(', ')}) ${selected}`
  }
  if (shapes.size >= MAX_SHAPES) shapes.clear()
  shapes.set(key, text)
  return text
}

/** The insert's SQL with placeholders numbered from `first`, and its parameters. */
function compileInsert(engine: Engine, insert: RowInsert, first: number): { text: string; parameters: unknown[] } {
  const parameters =
    'row' in insert
      ? Object.values(insert.row)
      : [
          ...Object.values(insert.shared),
          engine === 'postgres' ? [...insert.each.values] : JSON.stringify(insert.each.values),
        ]
  return { text: insertText(engine, insert, first), parameters }
}

function isEmpty(insert: RowInsert): boolean {
  return 'each' in insert && insert.each.values.length === 0
}

/**
 * PostgreSQL: the inserts as `WITH` items (`w0 as (insert … returning 1), w1 as (…)`) with
 * parameters from `$first`, for a statement that adds its own items and body after them (the change
 * feed does). PostgreSQL runs items nothing reads when the statement ends; an item that selects
 * from `names` makes them run before it.
 */
export function withInserts(inserts: readonly RowInsert[], first = 1): InsertPrefix {
  const items: string[] = []
  const parameters: unknown[] = []
  for (const insert of inserts) {
    if (isEmpty(insert)) continue
    const compiled = compileInsert('postgres', insert, first + parameters.length)
    items.push(`w${items.length} as (${compiled.text} returning 1)`)
    parameters.push(...compiled.parameters)
  }
  return { items: items.join(', '), names: items.map((_, i) => `w${i}`), parameters }
}

/**
 * Runs the inserts in the caller's transaction (or alone): one statement on PostgreSQL, one per
 * insert on SQLite. Rows are written in the order given on SQLite; on PostgreSQL foreign keys
 * between them are checked when the statement ends, so the order does not matter there either.
 */
export async function insertRows(db: Kysely<any>, inserts: readonly RowInsert[]): Promise<void> {
  const engine = engineOf(db)
  const present = inserts.filter((insert) => !isEmpty(insert))
  if (present.length === 0) return
  if (engine === 'sqlite') {
    for (const insert of present) {
      const { text, parameters } = compileInsert('sqlite', insert, 1)
      await db.executeQuery(CompiledQuery.raw(text, parameters))
    }
    return
  }
  const last = present[present.length - 1]!
  const prefix = withInserts(present.slice(0, -1))
  const body = compileInsert('postgres', last, prefix.parameters.length + 1)
  const text = prefix.items ? `with ${prefix.items} ${body.text}` : body.text
  await db.executeQuery(CompiledQuery.raw(text, [...prefix.parameters, ...body.parameters]))
}

/**
 * True where {@link insertRows} (and a statement built on {@link withInserts}) is one statement,
 * which is atomic on its own: a write that is nothing else needs no transaction there, and saves
 * the round trips of `start transaction` and `commit` (PostgreSQL). False on SQLite, where the
 * inserts are several statements.
 */
export function insertsAreOneStatement(db: Kysely<any>): boolean {
  return engineOf(db) === 'postgres'
}
