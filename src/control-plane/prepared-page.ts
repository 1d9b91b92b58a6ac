/**
 * Keyset pages (see pagination.ts) whose SQL is built and compiled once per shape of the list,
 * then re-run with each request's values.
 *
 * Why: building a list query with kysely, compiling it, compiling it again for the cursor's
 * fingerprint, and the garbage all that leaves, cost more than the indexed page itself (profiled in
 * bench/README.md: about half of a 50-item page). The SQL still comes from the query builder for
 * the database's dialect, so it stays portable, and the answer (rows, cursor, fingerprint) is the
 * one {@link keysetPage} gives for the same query: a cursor issued by either is valid for both.
 *
 * How: like {@link preparedQuery}, the builder runs once with sentinel strings in place of the
 * values; each compiled parameter equal to a sentinel becomes a slot. The shape is what the values
 * cannot express: which optional values are present (absent ones are passed as `undefined`, never a
 * sentinel) plus a key the caller gives for anything else that changes the SQL (a mode, a count of
 * search words). Values must reach the query as plain parameters, untransformed. On SQLite the page
 * is read straight on the read connection (see `directReads`).
 * @module
 */
import type { CompiledQuery, Kysely, SelectQueryBuilder } from 'kysely'
import { sql } from 'kysely'
import { andThen, type MaybePromise } from '../core/maybe-promise.ts'
import { directReads } from '../storage/database.ts'
import { decodeCursor, type KeysetColumn, type Page, pageFromRows, queryFingerprint } from './pagination.ts'

type Slot = { arg: number } | { value: unknown }

interface Compiled {
  compiled: CompiledQuery
  slots: Slot[]
}

interface Shape {
  /** The list query alone: its SQL and parameters are the cursor's fingerprint. */
  base: Compiled
  /** The first page: order and limit. */
  first: Compiled
  /** A later page: the cursor condition, order and limit. */
  after: Compiled
}

/** Distinct shapes kept per database handle; past it the cache starts over (filters rarely vary that much). */
const MAX_SHAPES = 256

const sentinel = (name: string) => `\u0000prepared-${name}\u0000`

/** Options for {@link preparedPage}. */
export interface PreparedPageOptions<DB, Row, Item> {
  /** Which list this is; cursors are only valid for the list that issued them. */
  scope: string
  /** Order columns; the last must be unique (the id) so the order is total. */
  order: KeysetColumn[]
  map: (row: Row) => Item
  /** Builds the list query (filters, no order or limit) from the shape key and the values. */
  // deno-lint-ignore no-explicit-any
  build: (db: Kysely<DB>, shape: string, values: ReadonlyArray<unknown>) => SelectQueryBuilder<DB, any, Row>
}

/** A keyset-paged list compiled once per shape and database handle. */
export function preparedPage<DB, Row, Item>(options: PreparedPageOptions<DB, Row, Item>) {
  const { order } = options
  const cache = new WeakMap<Kysely<DB>, Map<string, Shape>>()

  const prepare = (db: Kysely<DB>, shape: string, values: ReadonlyArray<unknown>): Shape => {
    const names = values.map((value, i) => (value === undefined ? undefined : sentinel(`arg-${i}`)))
    const cursorNames = order.map((_, i) => sentinel(`cursor-${i}`))
    const limitName = sentinel('limit')
    const slotsOf = (compiled: CompiledQuery): Slot[] =>
      compiled.parameters.map((p) => {
        if (typeof p !== 'string' || !p.startsWith('\u0000prepared-')) return { value: p }
        const arg = names.indexOf(p)
        if (arg >= 0) return { arg }
        const cursor = cursorNames.indexOf(p)
        return { arg: cursor >= 0 ? values.length + cursor : values.length + order.length }
      })
    // deno-lint-ignore no-explicit-any
    const base = options.build(db, shape, names) as SelectQueryBuilder<any, any, any>
    const baseCompiled = base.compile()
    const used = new Set(slotsOf(baseCompiled).flatMap((s) => ('arg' in s ? [s.arg] : [])))
    names.forEach((name, i) => {
      if (name !== undefined && !used.has(i))
        throw new Error(`preparedPage(${options.scope}): value ${i} must reach the query as a parameter`)
    })
    // deno-lint-ignore no-explicit-any
    const paged = (q: SelectQueryBuilder<any, any, any>) => {
      let out = q
      for (const col of order) out = out.orderBy(sql.ref(col.column), col.direction)
      return out.limit(limitName as unknown as number).compile()
    }
    const afterQuery = base.where((eb) =>
      eb.or(
        order.map((col, i) => {
          const equal = order.slice(0, i).map((prev, j) => eb(sql.ref(prev.column), '=', cursorNames[j]!))
          return eb.and([...equal, eb(sql.ref(col.column), col.direction === 'asc' ? '>' : '<', cursorNames[i]!)])
        }),
      ),
    )
    const first = paged(base)
    const after = paged(afterQuery)
    return {
      base: { compiled: baseCompiled, slots: slotsOf(baseCompiled) },
      first: { compiled: first, slots: slotsOf(first) },
      after: { compiled: after, slots: slotsOf(after) },
    }
  }

  const fill = (slots: Slot[], args: ReadonlyArray<unknown>) => slots.map((s) => ('arg' in s ? args[s.arg] : s.value))

  /**
   * One page of the list for `values` (absent optional values as `undefined`); `shape` names
   * whatever else changes the SQL.
   */
  // Synchronous on SQLite's read connection (see core/maybe-promise.ts): a list page then needs no promise.
  return (
    db: Kysely<DB>,
    shape: string,
    values: ReadonlyArray<unknown>,
    page: { cursor: string | undefined; limit: number },
  ): MaybePromise<Page<Item>> => {
    let shapes = cache.get(db)
    if (!shapes) cache.set(db, (shapes = new Map()))
    let key = shape
    for (const value of values) key += value === undefined ? '_' : '+'
    let entry = shapes.get(key)
    if (!entry) {
      if (shapes.size >= MAX_SHAPES) shapes.clear()
      shapes.set(key, (entry = prepare(db, shape, values)))
    }
    const fingerprint = queryFingerprint({
      sql: entry.base.compiled.sql,
      parameters: fill(entry.base.slots, values),
    })
    const after = page.cursor === undefined ? [] : decodeCursor(options.scope, page.cursor, order.length, fingerprint)
    const run = page.cursor === undefined ? entry.first : entry.after
    const args = [...values, ...order.map((_, i) => after[i]), page.limit + 1]
    const parameters = fill(run.slots, args)
    const direct = directReads(db)
    const rows = direct
      ? (direct(run.compiled.sql, parameters) as MaybePromise<Row[]>)
      : db.executeQuery<Row>({ ...run.compiled, parameters } as CompiledQuery<Row>).then((result) => result.rows)
    return andThen(rows, (found) =>
      pageFromRows(found, page.limit, { scope: options.scope, order, map: options.map }, fingerprint),
    )
  }
}
