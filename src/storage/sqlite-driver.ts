/**
 * kysely's SQLite driver, with a second connection for reads.
 *
 * Why: kysely serialises every query on SQLite's one connection, so while a transaction is open
 * (a create: begin, several inserts, commit, with awaits in between) every other request's reads
 * wait for it, and each query pays for a lock it rarely contends. In WAL mode a second connection
 * reads the last committed state without waiting for the writer, which is what a read outside a
 * transaction asks for anyway. So:
 * - a plain `select` outside a transaction runs on the reader connection, at once (no lock);
 * - anything else (writes, DDL, raw statements that are not a plain select) and everything inside
 *   a transaction runs on the writer connection, which one lease at a time holds from its first
 *   such query (or `begin`) until it is released, as kysely's own lock did.
 * The reader is opened with `query_only`, so a statement misjudged as a read fails instead of
 * writing. Nothing is cached: each read sees every transaction committed before it started, so a
 * revoked session or key is refused by the next request, as before.
 *
 * `:memory:` databases have no second connection (another connection would open another, empty
 * database): every query then takes the writer, as before.
 * @module
 */
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, SelectQueryNode } from 'kysely'
import type { RawSqlite } from './open-sqlite.ts'

const PLAIN_SELECT = /^\s*select\s/i

/** True for a statement that only reads: a select query, or raw SQL that is a plain select. */
function isRead(query: CompiledQuery): boolean {
  return SelectQueryNode.is(query.query) || (query.query.kind === 'RawNode' && PLAIN_SELECT.test(query.sql))
}

function execute<R>(db: RawSqlite, query: CompiledQuery): QueryResult<R> {
  const statement = db.prepare(query.sql)
  if (statement.reader) return { rows: statement.all(query.parameters) as R[] }
  const { changes, lastInsertRowid } = statement.run(query.parameters)
  return {
    insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
    numAffectedRows: changes != null ? BigInt(changes) : undefined,
    rows: [],
  }
}

/** One lease of the driver: reads go to the reader until it takes the writer, then everything does. */
class Lease implements DatabaseConnection {
  #release: (() => void) | null = null
  constructor(private readonly driver: SqliteReadWriteDriver) {}

  /** Takes the writer for the rest of this lease (no-op when held). */
  async hold(): Promise<void> {
    if (!this.#release) this.#release = await this.driver.lockWriter()
  }

  release(): void {
    const release = this.#release
    this.#release = null
    release?.()
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const reader = this.driver.reader
    try {
      if (!this.#release && reader && isRead(query)) return execute<R>(reader, query)
      await this.hold()
      return execute<R>(this.driver.writer, query)
    } catch (error) {
      this.driver.queryErrors++
      throw error
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('Sqlite driver only supports streaming of select queries')
    await this.hold()
    for (const row of this.driver.writer.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] }
  }
}

/** The driver: a writer connection behind a lock, and an optional reader connection. */
export class SqliteReadWriteDriver implements Driver {
  #tail: Promise<void> = Promise.resolve()
  /** Leases holding or waiting for the writer (metrics: in use and waiting). */
  #writerClaims = 0
  /** Statements that failed (metrics). */
  queryErrors = 0

  constructor(
    readonly writer: RawSqlite,
    readonly reader: RawSqlite | null,
  ) {}

  /** Waits for the writer and returns the function that gives it back. */
  async lockWriter(): Promise<() => void> {
    const before = this.#tail
    let release!: () => void
    this.#tail = new Promise<void>((resolve) => {
      release = resolve
    })
    this.#writerClaims++
    await before
    let released = false
    return () => {
      if (released) return
      released = true
      this.#writerClaims--
      release()
    }
  }

  /** The writer as a pool of one (plus the reader, which never waits): for metrics. */
  stats(): { size: number; inUse: number; waiting: number; queryErrors: number } {
    return {
      size: this.reader ? 2 : 1,
      inUse: this.#writerClaims > 0 ? 1 : 0,
      waiting: Math.max(0, this.#writerClaims - 1),
      queryErrors: this.queryErrors,
    }
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Lease(this)
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as Lease).hold()
    await connection.executeQuery(CompiledQuery.raw('begin'))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteName(name)}`))
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteName(name)}`))
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteName(name)}`))
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    ;(connection as Lease).release()
  }

  async destroy(): Promise<void> {
    // Wait for the writer's last holder, so a closing database never cuts a transaction short.
    const release = await this.lockWriter()
    try {
      this.reader?.close()
      this.writer.close()
    } finally {
      release()
    }
  }
}

function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
