/**
 * Key-set pagination for every control-plane list: `{items, nextCursor}` over a stable order that
 * ends in the row id (ids are unique and sort by creation time), computed in SQL as
 * "rows after the last one seen" with `limit + 1` rows fetched, so a page costs the same at row
 * 50 and at row 50,000 and never loads the whole table. Each list must have an index whose
 * columns are its filter columns followed by its order columns (e.g. `(org_id, id)`).
 *
 * The cursor is opaque to clients: base64url JSON of the last row's order values, the name of the
 * list it belongs to, and a fingerprint of the query it continues (its SQL and parameters: the
 * organization, the parent object and every filter), so a cursor is refused (400
 * `invalid_cursor`) by another list, another organization or another filter. No data could cross
 * without it (the organization is part of every query); the refusal tells a client that reuses a
 * cursor in the wrong place instead of silently giving it a page of something else.
 * @module
 */
import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'
import { sql, type SelectQueryBuilder } from 'kysely'
import * as v from 'valibot'
import type { ApiError } from '../core/errors.ts'
import { documentQueryParam } from './openapi-policy.ts'
import { controlPlaneError } from './control-plane-errors.ts'

/** A page of a list. */
export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

/** One order column: the SQL column reference, the row field it is read from, and its direction. */
export interface KeysetColumn {
  /** Column reference as written in SQL, e.g. `m.id` or `created_at`. */
  column: string
  /** Field of the selected row holding that value. */
  field: string
  direction: 'asc' | 'desc'
}

/** Options for {@link keysetPage}. */
export interface KeysetOptions<Row, Item> {
  /** Which list this is; cursors are only valid for the list that issued them. */
  scope: string
  cursor: string | undefined
  limit: number
  /** Order columns; the last must be unique (the id) so the order is total. */
  order: KeysetColumn[]
  map: (row: Row) => Item
  /**
   * The fingerprint cursors are bound to, when the query run is one of several equivalent forms
   * of the same list (so a cursor stays valid whichever form answers the next page); by default
   * the fingerprint of `query` itself.
   */
  fingerprint?: string
}

const MAX_CURSOR_LENGTH = 512

/** Query-parameter schemas for a paged list: `cursor` and `limit` (1..max, default `defaultLimit`). */
export function pageQuery(options: { max?: number; defaultLimit?: number } = {}) {
  const max = options.max ?? 100
  return {
    cursor: v.optional(
      v.pipe(
        v.string('must be given once'),
        v.minLength(1),
        v.maxLength(MAX_CURSOR_LENGTH),
        v.description(
          "Opaque cursor from the previous page's nextCursor, valid only for the same list, organization and filters (otherwise 400 invalid_cursor)",
        ),
      ),
    ),
    limit: documentQueryParam(
      v.optional(
        v.pipe(
          v.string('must be given once'),
          v.regex(/^-?\d+$/, 'must be an integer'),
          v.transform(Number),
          v.number(),
          v.minValue(1, 'must be at least 1'),
          v.maxValue(max, `must be at most ${max}`),
          v.description(`Page size, 1 to ${max}`),
        ),
        String(options.defaultLimit ?? Math.min(50, max)),
      ),
      {
        type: 'integer',
        minimum: 1,
        maximum: max,
        default: options.defaultLimit ?? Math.min(50, max),
        description: `Page size, 1 to ${max}`,
      },
    ),
  }
}

/** Encodes a cursor for `scope` at the given order values, bound to a query `fingerprint`. */
export function encodeCursor(scope: string, values: Array<string | number>, fingerprint = ''): string {
  return Buffer.from(
    JSON.stringify({ s: scope, k: values, ...(fingerprint ? { f: fingerprint } : {}) }),
    'utf8',
  ).toString('base64url')
}

/** An ISO-8601 timestamp parameter: the clock (`expires_at > now`), not part of what a list is. */
const CLOCK_VALUE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

/**
 * Fingerprint of the query a page continues: SHA-256 over its SQL and parameters, cut to 96 bits.
 * Timestamps are left out: filters like "pending invitations" compare with the current time,
 * which moves between pages; the comparison itself is in the SQL.
 */
export function queryFingerprint(compiled: { sql: string; parameters: ReadonlyArray<unknown> }): string {
  const parameters = compiled.parameters.map((p) =>
    p instanceof Date || (typeof p === 'string' && CLOCK_VALUE.test(p)) ? '<clock>' : p,
  )
  return createHash('sha256')
    .update(JSON.stringify([compiled.sql, parameters]))
    .digest()
    .subarray(0, 12)
    .toString('base64url')
}

function invalidCursor(): ApiError {
  return controlPlaneError('invalid_cursor', 'The cursor is not one this list issued; start again without a cursor')
}

/**
 * Decodes a cursor issued by {@link encodeCursor} for `scope` with `arity` values and the same
 * query `fingerprint`, or throws 400.
 */
export function decodeCursor(scope: string, cursor: string, arity: number, fingerprint = ''): Array<string | number> {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidCursor()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalidCursor()
  }
  const value = parsed as { s?: unknown; k?: unknown; f?: unknown }
  if (!value || typeof value !== 'object' || value.s !== scope || !Array.isArray(value.k) || value.k.length !== arity)
    throw invalidCursor()
  // A cursor without a fingerprint was issued by a version before cursors were bound (a rolling
  // upgrade runs both behind one load balancer): it is accepted as it was then.
  if (value.f !== undefined && value.f !== fingerprint) throw invalidCursor()
  if (!value.k.every((k) => typeof k === 'string' || (typeof k === 'number' && Number.isFinite(k))))
    throw invalidCursor()
  return value.k as Array<string | number>
}

/**
 * Runs `query` as one page: adds "after the cursor" (a lexicographic comparison across the order
 * columns, expanded into portable AND/OR so PostgreSQL and SQLite plan it the same), the order,
 * and `limit + 1`.
 */
// deno-lint-ignore no-explicit-any
export async function keysetPage<DB, TB extends keyof DB, Row, Item>(
  query: SelectQueryBuilder<DB, TB, Row>,
  options: KeysetOptions<Row, Item>,
): Promise<Page<Item>> {
  const { order } = options
  // deno-lint-ignore no-explicit-any
  let q = query as SelectQueryBuilder<any, any, any>
  // Compiled before the cursor condition is added, so every page of one list has the same one.
  const fingerprint = options.fingerprint ?? queryFingerprint(q.compile())
  if (options.cursor !== undefined) {
    const after = decodeCursor(options.scope, options.cursor, order.length, fingerprint)
    q = q.where((eb) => {
      const branches = order.map((col, i) => {
        const equal = order.slice(0, i).map((prev, j) => eb(sql.ref(prev.column), '=', after[j]!))
        return eb.and([...equal, eb(sql.ref(col.column), col.direction === 'asc' ? '>' : '<', after[i]!)])
      })
      return eb.or(branches)
    })
  }
  for (const col of order) q = q.orderBy(sql.ref(col.column), col.direction)
  const rows = (await q.limit(options.limit + 1).execute()) as Row[]
  return pageFromRows(rows, options.limit, options, fingerprint)
}

/**
 * Shapes `limit + 1` fetched rows into a page: the extra row only says there is more, and the
 * cursor names the last row returned. Shared by every keyset reader so cursors stay one format.
 */
export function pageFromRows<Row, Item>(
  rows: Row[],
  limit: number,
  options: { scope: string; order: readonly KeysetColumn[]; map: (row: Row) => Item },
  fingerprint: string,
): Page<Item> {
  const more = rows.length > limit
  const pageRows = more ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1] as Record<string, unknown> | undefined
  return {
    items: pageRows.map(options.map),
    nextCursor:
      more && last
        ? encodeCursor(
            options.scope,
            options.order.map((col) => last[col.field] as string | number),
            fingerprint,
          )
        : null,
  }
}
