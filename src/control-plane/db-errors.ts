/**
 * Recognising constraint violations across SQLite and PostgreSQL, so a race that slips past a
 * "does it exist?" check still ends as the route's 409 instead of an opaque 500.
 * @module
 */

/** True for a unique-constraint violation (SQLite `UNIQUE constraint failed`, PostgreSQL 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { message?: unknown; code?: unknown } | null
  if (!e) return false
  return (
    e.code === '23505' ||
    e.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    /UNIQUE constraint failed/i.test(String(e.message ?? ''))
  )
}
