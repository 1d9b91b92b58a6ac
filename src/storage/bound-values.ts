/**
 * The one rule for values bound to a query, on every engine: booleans are stored as 0/1 integers,
 * dates as ISO-8601 text, and `undefined` as NULL. bun:sqlite throws on a Date, node:sqlite throws
 * on a boolean and binds a Date as NULL, and PostgreSQL's integer columns refuse `true`; so no
 * driver ever sees either, and a column reads back the same on SQLite and PostgreSQL.
 * @module
 */

/** Converts a value about to be bound into the stored form. */
export function normalizeParam(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.toISOString()
  if (value === undefined) return null
  return value
}
