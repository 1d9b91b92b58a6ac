/**
 * The PostgreSQL seam: a `pg` pool shaped for kysely's `PostgresDialect`, with the same bound-value
 * rules as SQLite (booleans as 0/1, dates as ISO text) and connection failures turned into one
 * error type the HTTP layer answers with 503.
 *
 * Why `pg` and not `postgres` or `Bun.SQL`: `pg` runs unchanged in the compiled binary, under Bun
 * from source and under Deno, and kysely ships its dialect; the measured difference per query on
 * loopback is a few microseconds against a round trip of about 100 µs (bench/cases/pg-drivers.ts,
 * docs/configuration.md, "PostgreSQL and several instances").
 * @module
 */
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import pg from 'pg'
import { DatabaseUnavailableError } from '../core/errors.ts'
import { normalizeParam } from './bound-values.ts'
import { isStalePlan, MAX_STATEMENTS_PER_CONNECTION, StatementNames } from './statement-names.ts'

const TRANSACTION_START = /^\s*(start\s+transaction|begin)\b/i
const TRANSACTION_END = /^\s*(commit|rollback)\b/i

/** Settings for {@link openPostgresPool}. */
export interface PostgresPoolOptions {
  url: string
  /** Connections per instance (default 10). */
  poolSize: number
  /** Server-side statement timeout in ms (default 15,000); a query past it answers 503. */
  statementTimeoutMs: number
  /** How long to wait for a connection, from the pool or the server, in ms (default 5,000). */
  connectTimeoutMs: number
  /** Where a connection lost outside a query (the server ended it, the network dropped) is told. */
  onConnectionLost?: (lost: LostConnection) => void
}

/** A connection the server or the network ended, as one log line can say it (no URL, no password). */
export interface LostConnection {
  /** `pool` for a pooled connection, `listen` for the dedicated LISTEN connection. */
  connection: 'pool' | 'listen'
  /** SQLSTATE (`57P01`: terminated by an administrator or a shutdown) or the socket error code. */
  code: string | null
  message: string
}

/** A pool plus a direct client factory for LISTEN (which needs one session of its own). */
export interface PostgresHandle {
  pool: PostgresPool
  /** Opens a dedicated connection outside the pool (for LISTEN). */
  connectDedicated(): Promise<pg.Client>
  /** The URL with its password replaced, for log lines and errors. */
  safeUrl: string
  /**
   * Runs one statement on a pooled connection outside any transaction, past kysely's executor (its
   * connection provider, result transform and their awaits cost a tenth of a session lookup), with
   * the same statement names, error translation and connection retirement as every other query.
   */
  read(text: string, values: ReadonlyArray<unknown>): Promise<unknown[]>
  /** The pool's connections and the statements that failed so far (metrics). */
  stats(): { size: number; inUse: number; waiting: number; queryErrors: number }
  end(): Promise<void>
}

/** The URL without its password, for anything a person or a log may read. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'postgres://(unparseable url)'
  }
}

/** Host and port of a PostgreSQL URL, for messages that must not carry the password. */
export function databaseEndpoint(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname || ''}`
  } catch {
    return '(unparseable url)'
  }
}

// int8 (count(*), sum) arrives as a string from pg; our counts fit in a double, and SQLite returns numbers.
const INT8_OID = 20
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value)
    return pg.types.getTypeParser(oid, format as 'text')
  },
}

// SQLSTATE classes and codes meaning "the database is not reachable or not serving now", as opposed
// to a bad query: connection exceptions (08), operator intervention (57: shutdown, query cancelled
// by statement_timeout), insufficient resources (53), and too many connections.
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '57014', '53300', '53000', '53100', '53200'])
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'])

/** True when an error from `pg` means the database is unreachable, stopping or timed out. */
export function isUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null
  if (!e) return false
  const code = typeof e.code === 'string' ? e.code : ''
  if (code.startsWith('08') || UNAVAILABLE_CODES.has(code) || NETWORK_CODES.has(code)) return true
  const message = String(e.message ?? '')
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly/i.test(
    message,
  )
}

function translate(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) return error
  if (!isUnavailable(error)) return error
  const e = error as { code?: string }
  return new DatabaseUnavailableError(e.code === '57014' ? 'statement_timeout' : 'unreachable')
}

/**
 * Opens a pool. Nothing connects until the first query; {@link checkPostgres} proves the server
 * answers at start so a wrong URL exits with a reason instead of failing the first request.
 */
export function openPostgresPool(options: PostgresPoolOptions): PostgresHandle {
  const config: pg.PoolConfig = {
    connectionString: options.url,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs,
    // A client-side bound as well: a server that stops answering mid-query must not hold a request forever.
    query_timeout: options.statementTimeoutMs + 5_000,
    application_name: 'service-server',
    keepAlive: true,
    types: typeParsers,
  }
  // Every connection has an `error` listener from the moment it exists: a connection ended by the
  // server while it was still being set up, or after the pool let go of it, otherwise has none, and
  // `pg` throws the error as uncaught (a multi-line dump on stderr, whatever the log format).
  const lostListener = (connection: LostConnection['connection']) => (error: unknown) => {
    const e = error as { code?: unknown; message?: unknown } | null
    options.onConnectionLost?.({
      connection,
      code: typeof e?.code === 'string' ? e.code : null,
      message: scrubDatabaseUrl(typeof e?.message === 'string' ? e.message : String(error), options.url),
    })
  }
  const onPoolClientLost = lostListener('pool')
  config.Client = class extends pg.Client {
    constructor(clientConfig?: string | pg.ClientConfig) {
      super(clientConfig)
      this.on('error', onPoolClientLost)
    }
  }
  const pool = new pg.Pool(config)
  const names = new StatementNames()
  let queryErrors = 0
  // An idle client losing its connection emits 'error' on the pool; without a listener that would
  // crash the process. The next checkout gets a fresh connection.
  pool.on('error', () => {})
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client)
    if (wrapper) return wrapper
    // A connection that failed mid-query must not go back into the pool, nor one holding as many
    // prepared statements as it may.
    let broken = false
    let retire = false
    let inTransaction = false
    const prepared = new Set<string>()
    client.on('error', () => {
      broken = true
    })
    const fail = (error: unknown): never => {
      queryErrors++
      if (isUnavailable(error) && (error as { code?: string }).code !== '57014') broken = true
      throw translate(error)
    }
    wrapper = {
      query: ((sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>) => {
        if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as pg.Submittable)
        const text = sqlOrCursor
        const values = parameters ? parameters.map(normalizeParam) : []
        if (TRANSACTION_START.test(text)) inTransaction = true
        else if (TRANSACTION_END.test(text)) inTransaction = false
        let name = names.nameFor(text, values.length)
        if (name !== null && !prepared.has(name)) {
          if (prepared.size >= MAX_STATEMENTS_PER_CONNECTION) {
            retire = true
            name = null
          } else prepared.add(name)
        }
        if (name === null) return client.query(text, values).catch(fail)
        return client.query({ name, text, values }).catch((error: unknown) => {
          if (!isStalePlan(error)) return fail(error)
          // A column was added under a `select *` this connection had prepared: the text gets a new
          // name everywhere. Outside a transaction it simply runs again; inside one, the
          // transaction is aborted and runs again from the start (serializable-transactions.ts).
          names.forget(text)
          if (inTransaction) return fail(error)
          return client.query(text, values).catch(fail)
        })
      }) as unknown as PostgresPoolClient['query'],
      release: (destroy?: boolean) => client.release(destroy || broken || retire ? true : undefined),
    }
    wrappers.set(client, wrapper)
    return wrapper
  }
  const kyselyPool: PostgresPool = {
    options: pool.options,
    async connect() {
      try {
        return wrap(await pool.connect())
      } catch (error) {
        throw translate(error)
      }
    },
    end: () => pool.end(),
  }
  return {
    pool: kyselyPool,
    safeUrl: redactDatabaseUrl(options.url),
    stats: () => ({
      size: pool.totalCount,
      inUse: pool.totalCount - pool.idleCount,
      waiting: pool.waitingCount,
      queryErrors,
    }),
    async read(text, values) {
      const client = await kyselyPool.connect()
      try {
        const result = (await client.query(text, values as unknown[])) as unknown as { rows: unknown[] }
        return result.rows
      } finally {
        client.release()
      }
    },
    async connectDedicated() {
      const client = new pg.Client({
        connectionString: options.url,
        connectionTimeoutMillis: options.connectTimeoutMs,
        application_name: 'service-server-listen',
        keepAlive: true,
        types: typeParsers,
      })
      client.on('error', lostListener('listen'))
      await client.connect()
      return client
    },
    end: () => pool.end(),
  }
}

/** The database cannot be used at start; the process exits 2 with this message (no password in it). */
export class DatabaseStartError extends Error {
  readonly exitCode = 2
  constructor(message: string) {
    super(message)
    this.name = 'DatabaseStartError'
  }
}

/**
 * Proves the server answers and the URL is usable, for the start-up check. The message names the
 * host, port and database and what failed, never the password.
 */
export async function checkPostgres(url: string, timeoutMs: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('select 1')
  } catch (error) {
    const e = error as { code?: string; message?: string }
    const what = e.code && !/^\d/.test(e.code) ? e.code : (e.message ?? String(error))
    throw new DatabaseStartError(`PostgreSQL at ${databaseEndpoint(url)} is not usable: ${scrubDatabaseUrl(what, url)}`)
  } finally {
    await client.end().catch(() => {})
  }
}

/** Removes a URL's password (and the URL itself) from a driver message before it is shown. */
export function scrubDatabaseUrl(message: string, url: string): string {
  let out = message
  try {
    const password = decodeURIComponent(new URL(url).password)
    if (password) out = out.split(password).join('***')
  } catch {
    // an unparseable URL has no password to scrub
  }
  return out.split(url).join(redactDatabaseUrl(url))
}
