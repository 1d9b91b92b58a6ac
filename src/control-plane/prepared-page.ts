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
import type { Kysely, SelectQueryBuilder } from 'kysely'
import { sql } from 'kysely'
import { andThen, type MaybePromise } from '../core/maybe-promise.ts'
import { decodeCursor, type KeysetColumn, type Page, pageFromRows, queryFingerprint } from './pagination.ts'
import {
  fillSlots,
  requireSlots,
  runSlotted,
  sentinel,
  shapeCache,
  type SlottedQuery,
  slotted,
} from './sentinel-slots.ts'

interface Shape {
  /** The list query alone: its SQL and parameters are the cursor's fingerprint. */
  base: SlottedQuery
  /** The first page: order and limit. */
  first: SlottedQuery
  /** A later page: the cursor condition, order and limit. */
  after: SlottedQuery
}

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
  const shapes = shapeCache<Shape>()

  const prepare = (db: Kysely<DB>, shape: string, values: ReadonlyArray<unknown>): Shape => {
    const names = values.map((value, i) => (value === undefined ? undefined : sentinel(`arg-${i}`)))
    const cursorNames = order.map((_, i) => sentinel(`cursor-${i}`))
    const limitName = sentinel('limit')
    // Slots: the values, then the cursor's columns, then the limit.
    const all = [...names, ...cursorNames, limitName]
    // deno-lint-ignore no-explicit-any
    const base = options.build(db, shape, names) as SelectQueryBuilder<any, any, any>
    const baseQuery = slotted(base.compile(), all)
    requireSlots(
      baseQuery,
      names,
      (i) => `preparedPage(${options.scope}): value ${i} must reach the query as a parameter`,
    )
    // deno-lint-ignore no-explicit-any
    const paged = (q: SelectQueryBuilder<any, any, any>) => {
      let out = q
      for (const col of order) out = out.orderBy(sql.ref(col.column), col.direction)
      return slotted(out.limit(limitName as unknown as number).compile(), all)
    }
    const afterQuery = base.where((eb) =>
      eb.or(
        order.map((col, i) => {
          const equal = order.slice(0, i).map((prev, j) => eb(sql.ref(prev.column), '=', cursorNames[j]!))
          return eb.and([...equal, eb(sql.ref(col.column), col.direction === 'asc' ? '>' : '<', cursorNames[i]!)])
        }),
      ),
    )
    return { base: baseQuery, first: paged(base), after: paged(afterQuery) }
  }

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
    let key = shape
    for (const value of values) key += value === undefined ? '_' : '+'
    const entry = shapes(db, key, () => prepare(db, shape, values))
    const fingerprint = queryFingerprint({ sql: entry.base.compiled.sql, parameters: fillSlots(entry.base, values) })
    const after = page.cursor === undefined ? [] : decodeCursor(options.scope, page.cursor, order.length, fingerprint)
    const run = page.cursor === undefined ? entry.first : entry.after
    const rows = runSlotted<Row>(db, run, [...values, ...order.map((_, i) => after[i]), page.limit + 1])
    return andThen(rows, (found) =>
      pageFromRows(found, page.limit, { scope: options.scope, order, map: options.map }, fingerprint),
    )
  }
}
