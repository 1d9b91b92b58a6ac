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
 * @module
 */
import {
  type Expression,
  type ExpressionBuilder,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { Db } from '../schema.ts'
import { decodeCursor, encodeCursor, keysetPage, type Page, queryFingerprint } from '../pagination.ts'

/**
 * How many pages' worth of rows the row form may pass before the set form takes over: a member
 * who sees at least about half of what follows the cursor is answered by the walk.
 */
const WINDOW_PAGES = 2
/** Reach (in pages' worth of ids) under which the set form answers directly. */
const REACH_CAP_PAGES = 8

/** Options for {@link visiblePage}. */
export interface VisiblePageOptions<Row, Item> {
  scope: string
  cursor: string | undefined
  limit: number
  /** The id column the list is ordered by (ascending) and the row field holding it. */
  column: string
  field: string
  map: (row: Row) => Item
  /** The condition this list has always been filtered by: cursors are bound to its fingerprint. */
  // deno-lint-ignore no-explicit-any
  setCondition: (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>
  /** The ids of that set (repeats allowed) driven from what the member holds: the set form runs `id IN` them. */
  reachIds: RawBuilder<unknown>
  /** The same condition checked on one row: runs in the walk. */
  rowCondition: RawBuilder<unknown>
}

/**
 * A page of `base` (filtered and org-scoped, without the visibility condition) keeping the rows
 * the member sees; see the module comment for how the two forms are chosen.
 */
export async function visiblePage<DB, TB extends keyof DB, Row, Item>(
  db: Db,
  base: SelectQueryBuilder<DB, TB, Row>,
  options: VisiblePageOptions<Row, Item>,
): Promise<Page<Item>> {
  // deno-lint-ignore no-explicit-any
  const q = base as unknown as SelectQueryBuilder<any, any, any>
  // Cursors issued before the walk existed stay valid: the fingerprint is still that of the set form.
  const fingerprint = queryFingerprint(q.where(options.setCondition).compile())
  const after =
    options.cursor === undefined ? undefined : decodeCursor(options.scope, options.cursor, 1, fingerprint)[0]
  const id = sql.ref(options.column)
  // On a later page only ids after the cursor are looked up: the reachable ids are spread through
  // the catalog, and each lookup of a row before the cursor would touch pages for nothing. (The
  // first branch of every reach set selects `g.resource_id`, which names the UNION's column.)
  const reachAfter =
    after === undefined
      ? options.reachIds
      : sql`select r.resource_id from (${options.reachIds}) r where r.resource_id > ${after}`
  const bySet = () =>
    keysetPage(q.where(sql<SqlBool>`${id} in (${reachAfter})`), {
      scope: options.scope,
      cursor: options.cursor,
      limit: options.limit,
      order: [{ column: options.column, field: options.field, direction: 'asc' }],
      map: options.map,
      fingerprint,
    })
  const cap = REACH_CAP_PAGES * (options.limit + 1)
  const reach = await sql<{
    n: number | string
  }>`select count(*) as n from (${options.reachIds} limit ${cap}) reach`.execute(db)
  // PostgreSQL's count is a bigint, which its driver returns as text.
  if (Number(reach.rows[0]?.n ?? 0) < cap) return bySet()
  const ids = () => {
    let w = q.clearSelect().select(id.as('window_id'))
    if (after !== undefined) w = w.where(id, '>', after)
    return w.orderBy(id)
  }
  const windowSize = WINDOW_PAGES * (options.limit + 1)
  // The last id of the window, as one scalar: a constant bound, so the walk is an index range.
  const windowEnd = sql`(select max(w.window_id) from ${ids().limit(windowSize).as('w')})`
  let walk = q.where(options.rowCondition as Expression<SqlBool>).where(id, '<=', windowEnd)
  if (after !== undefined) walk = walk.where(id, '>', after)
  const rows = (await walk
    .orderBy(id)
    .limit(options.limit + 1)
    .execute()) as Row[]
  const pageOf = (found: Row[]): Page<Item> => {
    const more = found.length > options.limit
    const pageRows = more ? found.slice(0, options.limit) : found
    const last = pageRows[pageRows.length - 1] as Record<string, unknown> | undefined
    return {
      items: pageRows.map(options.map),
      nextCursor:
        more && last ? encodeCursor(options.scope, [last[options.field] as string | number], fingerprint) : null,
    }
  }
  if (rows.length > options.limit) return pageOf(rows)
  // The walk came up short: complete if the window held every remaining row, else the member sees
  // little of what follows, and the set form answers.
  const beyond = await ids().limit(1).offset(windowSize).execute()
  if (beyond.length === 0) return pageOf(rows)
  return bySet()
}
