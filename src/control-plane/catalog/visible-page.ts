/**
 * One page of a list a plain member sees through grants, plugins and hubs, at a cost that follows
 * the page rather than the catalog or the member's reach.
 *
 * The visibility filter has two equivalent forms, and each is cheap where the other is not:
 * - the set form (`id IN (every id the member can reach)`) builds the member's whole reachable set
 *   before it returns a row: cheap when they reach little, but at 6,000 skills a member who
 *   receives 150 hubs has thousands of ids built on every page, first or deep;
 * - the row form (EXISTS probes keyed by each row's id, walking the list's index in id order)
 *   costs per row passed: cheap when most rows are visible, but a member who sees 2 % of a large
 *   catalog would walk far past invisible rows to fill a page.
 * So a page first counts what the member reaches, stopping at a cap (index-only ranges over their
 * grants and hub and plugin contents, at most the cap's worth). Under the cap the set form
 * answers: its cost is bounded by the cap whatever the catalog holds. At the cap they reach a
 * lot, and a bounded window of the next rows in id order is walked with the row form; when they
 * see at least about half of it the walk fills the page (or reaches the end of the list), so its
 * cost follows the page. Only a member who reaches more than the cap yet sees little of what
 * follows the cursor falls back to the set form, whose cost then follows what they reach.
 * Every statement is an index range on both engines.
 *
 * Both forms run with the same filters, order and cursor, and cursors are bound to the set form's
 * fingerprint (the query this list always ran), so a cursor is valid whichever form answers.
 *
 * Every statement is built and compiled once per shape of the list and database handle, as
 * `prepared-page.ts` does for plain lists (sentinel values become slots): building and compiling
 * the four or five statements of a page cost more CPU than running them (`bench/pg-profile.ts`).
 * @module
 */
import type { CompiledQuery, Expression, ExpressionBuilder, RawBuilder, SelectQueryBuilder, SqlBool } from 'kysely'
import { sql } from 'kysely'
import type { Db } from '../schema.ts'
import { decodeCursor, type KeysetColumn, type Page, pageFromRows, queryFingerprint } from '../pagination.ts'
import {
  fillSlots,
  requireSlots,
  runSlotted,
  sentinel,
  shapeCache,
  type SlottedQuery,
  slotted,
} from '../sentinel-slots.ts'

/**
 * How many pages' worth of rows the row form may pass before the set form takes over: a member
 * who sees at least about half of what follows the cursor is answered by the walk.
 */
const WINDOW_PAGES = 2
/** Reach (in pages' worth of ids) under which the set form answers directly. */
const REACH_CAP_PAGES = 8

/** A list and its visibility, built from the shape key and the values (sentinels when prepared). */
export interface VisibleList<Row> {
  /** The list query: filtered and org-scoped, without the visibility condition, order or limit. */
  // deno-lint-ignore no-explicit-any
  base: SelectQueryBuilder<any, any, Row>
  /** The condition this list has always been filtered by: cursors are bound to its fingerprint. */
  // deno-lint-ignore no-explicit-any
  setCondition: (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>
  /**
   * The ids of that set (repeats allowed) driven from what the member holds: the set form runs
   * `id IN` them. With `after` (a later page's cursor, as a value), only ids above it, each branch
   * starting there, so a deep page does not read everything the member reaches.
   */
  reachIds: (after?: unknown) => RawBuilder<unknown>
  /** The same condition checked on one row: runs in the walk. */
  rowCondition: RawBuilder<unknown>
}

/** Options for {@link preparedVisiblePage}. */
export interface VisiblePageOptions<Row, Item> {
  scope: string
  /** The id column the list is ordered by (ascending) and the row field holding it. */
  column: string
  field: string
  map: (row: Row) => Item
  /**
   * Builds the list from the shape key (whatever else changes the SQL) and the values, each of
   * which must reach the SQL as a plain parameter (they are sentinels when the shape is prepared);
   * an optional value that is absent is `undefined`, and its filter is left out.
   */
  build: (db: Db, shape: string, values: ReadonlyArray<unknown>) => VisibleList<Row>
}

/** The statements of one shape, each for the first page and for a page after a cursor. */
interface Shape {
  fingerprint: SlottedQuery
  count: [SlottedQuery, SlottedQuery]
  bySet: [SlottedQuery, SlottedQuery]
  walk: [SlottedQuery, SlottedQuery]
  beyond: [SlottedQuery, SlottedQuery]
}

/**
 * A visible page (see the module comment for how the two forms are chosen) compiled once per
 * shape and database handle. Returns `(db, shape, values, page) => Promise<Page>`.
 */
export function preparedVisiblePage<Row, Item>(options: VisiblePageOptions<Row, Item>) {
  const order: KeysetColumn[] = [{ column: options.column, field: options.field, direction: 'asc' }]
  const shapes = shapeCache<Shape>()

  const prepare = (db: Db, shape: string, values: ReadonlyArray<unknown>): Shape => {
    // An absent optional value stays `undefined` (the builder leaves its filter out); the key says which are present.
    const names = values.map((value, i) => (value === undefined ? undefined : sentinel(`arg-${i}`)))
    // Run-time arguments after the values: the cursor's id, the page's limit + 1, the reach cap, the window.
    const [after, limit, cap, windowSize] = ['after', 'limit', 'cap', 'window'].map(sentinel) as [
      string,
      string,
      string,
      string,
    ]
    const all = [...names, after, limit, cap, windowSize]
    const prepared = (compiled: CompiledQuery) => slotted(compiled, all)
    const list = options.build(db, shape, names)
    // deno-lint-ignore no-explicit-any
    const q = list.base as unknown as SelectQueryBuilder<any, any, any>
    const fingerprint = prepared(q.where(list.setCondition).compile())
    requireSlots(fingerprint, names, (i) => `preparedVisiblePage(${options.scope}): value ${i} must reach the query`)
    const id = sql.ref(options.column)
    const both = (
      make: (later: boolean) => CompiledQuery | { compile(): CompiledQuery },
    ): [SlottedQuery, SlottedQuery] => {
      const compile = (later: boolean) => {
        const made = make(later)
        return 'compile' in made ? made.compile() : made
      }
      return [prepared(compile(false)), prepared(compile(true))]
    }
    // On a later page only ids after the cursor are looked up, each branch of the reach set starting
    // at the cursor: the reachable ids are spread through the catalog, and reading (then looking up)
    // those before the cursor would cost what the member reaches, not what the page needs.
    const reach = (later: boolean) => list.reachIds(later ? after : undefined)
    const afterCursor = (query: typeof q, later: boolean) => (later ? query.where(id, '>', after) : query)
    const ids = (later: boolean) => afterCursor(q.clearSelect().select(id.as('window_id')), later).orderBy(id)
    return {
      fingerprint,
      count: both((later) => sql`select count(*) as n from (${reach(later)} limit ${cap}) reach`.compile(db)),
      bySet: both((later) =>
        afterCursor(q.where(sql<SqlBool>`${id} in (${reach(later)})`), later)
          .orderBy(id)
          .limit(limit as unknown as number),
      ),
      // The last id of the window, as one scalar: a constant bound, so the walk is an index range.
      walk: both((later) =>
        afterCursor(
          q.where(list.rowCondition as Expression<SqlBool>).where(
            id,
            '<=',
            sql`(select max(w.window_id) from ${ids(later)
              .limit(windowSize as unknown as number)
              .as('w')})`,
          ),
          later,
        )
          .orderBy(id)
          .limit(limit as unknown as number),
      ),
      beyond: both((later) =>
        ids(later)
          .limit(1)
          .offset(windowSize as unknown as number),
      ),
    }
  }

  return async (
    db: Db,
    shape: string,
    values: ReadonlyArray<unknown>,
    page: { cursor?: string; limit: number },
  ): Promise<Page<Item>> => {
    let key = `${shape}|`
    for (const value of values) key += value === undefined ? '_' : '+'
    const entry = shapes(db, key, () => prepare(db, shape, values))
    const windowSize = WINDOW_PAGES * (page.limit + 1)
    const args = (after: unknown) => [...values, after, page.limit + 1, REACH_CAP_PAGES * (page.limit + 1), windowSize]
    // Cursors issued before the walk existed stay valid: the fingerprint is still that of the set form.
    const fingerprint = queryFingerprint({
      sql: entry.fingerprint.compiled.sql,
      parameters: fillSlots(entry.fingerprint, args(undefined)),
    })
    const after = page.cursor === undefined ? undefined : decodeCursor(options.scope, page.cursor, 1, fingerprint)[0]
    const all = args(after)
    const later = after === undefined ? 0 : 1
    const run = async <R>(pair: [SlottedQuery, SlottedQuery]): Promise<R[]> => runSlotted<R>(db, pair[later], all)
    const pageOf = (rows: Row[]) =>
      pageFromRows(rows, page.limit, { scope: options.scope, order, map: options.map }, fingerprint)
    const bySet = async () => pageOf(await run<Row>(entry.bySet))
    const [reach] = await run<{ n: number | string }>(entry.count)
    // PostgreSQL's count is a bigint, which its driver returns as text.
    if (Number(reach?.n ?? 0) < REACH_CAP_PAGES * (page.limit + 1)) return bySet()
    const rows = await run<Row>(entry.walk)
    if (rows.length > page.limit) return pageOf(rows)
    // The walk came up short: complete if the window held every remaining row, else the member sees
    // little of what follows, and the set form answers.
    const beyond = await run<unknown>(entry.beyond)
    if (beyond.length === 0) return pageOf(rows)
    return bySet()
  }
}
