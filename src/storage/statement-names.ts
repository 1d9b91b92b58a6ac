/**
 * Names for PostgreSQL prepared statements, so a query text sent again on the same connection is
 * bound and executed without being parsed, analysed and (once PostgreSQL settles on a generic plan)
 * planned again. kysely sends every query as an unnamed statement; measured on loopback, the
 * session lookup (four tables joined) took 486 µs unnamed against 137 µs named (bench/cases/pg-drivers.ts).
 *
 * Names are global (one text, one name, on every connection) and never reused for another text,
 * so a connection can never hold a name bound to different SQL. Each connection remembers how many
 * statements it has prepared: PostgreSQL keeps them until the session ends, so a connection past
 * {@link MAX_STATEMENTS_PER_CONNECTION} is retired when released and the pool opens a fresh one.
 * @module
 */

/** Statements one connection may hold before it is retired (the hot set of a server is far smaller). */
export const MAX_STATEMENTS_PER_CONNECTION = 400

/** Texts remembered with their name; past this the table starts again with new names. */
const MAX_NAMED_TEXTS = 4_000

// Transaction control and anything without parameters stay unnamed: the latter goes out on the
// simple protocol, which is what lets a migration send several statements in one string.
const CONTROL =
  /^\s*(start\s+transaction|begin|commit|rollback|savepoint|release|set\s|reset\s|discard|listen|unlisten)/i

/** The process-wide table of statement names. */
export class StatementNames {
  readonly #names = new Map<string, string>()
  #next = 0

  /** The name for `text`, or null when it should go unnamed. */
  nameFor(text: string, parameterCount: number): string | null {
    if (parameterCount === 0) return null
    let name = this.#names.get(text)
    if (name !== undefined) return name
    if (CONTROL.test(text)) return null
    if (this.#names.size >= MAX_NAMED_TEXTS) this.#names.clear()
    name = `svc_${(this.#next++).toString(36)}`
    this.#names.set(text, name)
    return name
  }

  /** Drops `text`'s name, so its next use prepares it afresh under a new one. */
  forget(text: string): void {
    this.#names.delete(text)
  }
}

/** PostgreSQL's answer when a prepared statement's result columns changed under it (a column added to a `select *` table). */
export function isStalePlan(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null
  return e?.code === '0A000' && /cached plan must not change result type/i.test(String(e.message ?? ''))
}
