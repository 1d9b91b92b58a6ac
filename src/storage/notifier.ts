/**
 * Wake-ups that cross instances: "something was written on channel X". PostgreSQL delivers them
 * with LISTEN/NOTIFY to every instance on the same database; on SQLite there is one process, so an
 * in-process fan-out is the same thing. A wake-up carries at most a small hint; subscribers read
 * what changed from the database, so a lost wake-up (a dropped LISTEN connection, a crash between
 * commit and notify) costs latency, never data: the listener reconnects and wakes everyone once.
 * @module
 */
import { sql, type Kysely } from 'kysely'
import type { PostgresHandle } from './open-postgres.ts'
import { afterCommit } from './serializable-transactions.ts'

/** A handler receives the payload, or `''` when wake-ups may have been missed (after a reconnect). */
export type NotifyHandler = (payload: string) => void

/** Cross-instance wake-ups. */
export interface Notifier {
  /** Sends a wake-up to every listener of `channel` on every instance. Call after the commit. */
  notify(channel: string, payload?: string): Promise<void>
  /**
   * Sends a wake-up as part of the transaction `db`: PostgreSQL delivers it at commit and drops it
   * on rollback; on SQLite the one connection is busy until the transaction ends, so a listener's
   * read waits for the commit either way.
   */
  notifyIn(db: Kysely<any>, channel: string, payload?: string): Promise<void>
  /** Listens on `channel`; returns the function that stops listening. */
  listen(channel: string, handler: NotifyHandler): () => void
  close(): void | Promise<void>
}

const CHANNEL = /^[a-z][a-z0-9_]{0,62}$/

function checkChannel(channel: string): string {
  // Channel names are identifiers in LISTEN; allowing only these characters keeps them unquoted-safe.
  if (!CHANNEL.test(channel)) throw new Error(`invalid notification channel ${JSON.stringify(channel)}`)
  return channel
}

class Fanout {
  readonly #handlers = new Map<string, Set<NotifyHandler>>()

  add(channel: string, handler: NotifyHandler): boolean {
    let set = this.#handlers.get(channel)
    const first = !set
    if (!set) this.#handlers.set(channel, (set = new Set()))
    set.add(handler)
    return first
  }

  remove(channel: string, handler: NotifyHandler): boolean {
    const set = this.#handlers.get(channel)
    if (!set) return false
    set.delete(handler)
    if (set.size > 0) return false
    this.#handlers.delete(channel)
    return true
  }

  channels(): string[] {
    return [...this.#handlers.keys()]
  }

  emit(channel: string, payload: string): void {
    for (const handler of [...(this.#handlers.get(channel) ?? [])]) {
      try {
        handler(payload)
      } catch {
        // one subscriber's failure must not stop the others
      }
    }
  }

  emitAll(payload: string): void {
    for (const channel of this.channels()) this.emit(channel, payload)
  }

  clear(): void {
    this.#handlers.clear()
  }
}

/** The SQLite notifier: one process, so wake-ups are delivered in it, on the next turn. */
export function localNotifier(): Notifier {
  const fanout = new Fanout()
  return {
    async notify(channel, payload = '') {
      checkChannel(channel)
      queueMicrotask(() => fanout.emit(channel, payload))
    },
    async notifyIn(_db, channel, payload = '') {
      checkChannel(channel)
      // Like PostgreSQL's NOTIFY, delivered at commit: woken before it, a reader on the other
      // connection would find nothing yet and wait for its next poll.
      const emit = () => queueMicrotask(() => fanout.emit(channel, payload))
      if (!afterCommit(emit)) emit()
    },
    listen(channel, handler) {
      fanout.add(checkChannel(channel), handler)
      return () => {
        fanout.remove(channel, handler)
      }
    },
    close() {
      fanout.clear()
    },
  }
}

/**
 * The PostgreSQL notifier: NOTIFY through the pool, LISTEN on one dedicated connection per
 * instance, opened on the first listener and re-opened with backoff when it drops.
 */
export function postgresNotifier(handle: PostgresHandle, db: Kysely<any>): Notifier {
  const fanout = new Fanout()
  type Client = Awaited<ReturnType<PostgresHandle['connectDedicated']>>
  let client: Client | null = null
  let connecting: Promise<void> | null = null
  let closed = false
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let failures = 0

  const scheduleReconnect = () => {
    if (closed || retryTimer) return
    const delay = Math.min(5_000, 100 * 2 ** Math.min(failures, 6))
    failures++
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      void connect()
    }, delay)
    retryTimer.unref?.()
  }

  const connect = (): Promise<void> => {
    if (closed || client) return Promise.resolve()
    if (connecting) return connecting
    connecting = (async () => {
      try {
        const next = await handle.connectDedicated()
        next.on('notification', (message: { channel: string; payload?: string }) =>
          fanout.emit(message.channel, message.payload ?? ''),
        )
        const lost = () => {
          if (client !== next) return
          client = null
          void next.end().catch(() => {})
          scheduleReconnect()
        }
        next.on('error', lost)
        next.on('end', lost)
        for (const channel of fanout.channels()) await next.query(`listen ${channel}`)
        if (closed) {
          await next.end().catch(() => {})
          return
        }
        client = next
        // Anything sent while we were not listening is unknown: wake every subscriber once to re-read.
        if (failures > 0) fanout.emitAll('')
        failures = 0
      } catch {
        scheduleReconnect()
      } finally {
        connecting = null
      }
    })()
    return connecting
  }

  return {
    async notify(channel, payload = '') {
      await sql`select pg_notify(${checkChannel(channel)}, ${payload})`.execute(db)
    },
    async notifyIn(trx, channel, payload = '') {
      await sql`select pg_notify(${checkChannel(channel)}, ${payload})`.execute(trx)
    },
    listen(channel, handler) {
      checkChannel(channel)
      if (fanout.add(channel, handler)) {
        if (client) void client.query(`listen ${channel}`).catch(() => {})
        else void connect()
      }
      return () => {
        if (fanout.remove(channel, handler) && client) void client.query(`unlisten ${channel}`).catch(() => {})
      }
    },
    async close() {
      closed = true
      if (retryTimer) clearTimeout(retryTimer)
      fanout.clear()
      if (connecting) await connecting
      const current = client
      client = null
      if (current) await current.end().catch(() => {})
    },
  }
}
