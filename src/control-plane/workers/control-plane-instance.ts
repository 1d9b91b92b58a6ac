/**
 * This control plane's identity among the instances that share one database: an id, the host it
 * runs on and its pid, registered at start and renewed on a heartbeat. Worker runtimes belong to
 * the instance that started them (runtime-ownership.ts); another instance decides that an owner
 * is gone from these rows: it stopped gracefully, its heartbeat is older than
 * `workers.instanceStaleAfterMs`, or it ran on this host and its process no longer exists (so a
 * restart after a crash does not wait out the staleness window).
 * @module
 */
import type { Kysely } from 'kysely'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { newId } from '../../core/ids.ts'
import type { Logger } from '../../core/logger.ts'
import { iso } from '../jobs/job-queue.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { ControlPlaneInstanceTable } from './worker-tables.ts'

/** Heartbeat settings of instances (configuration `workers.instance*`). */
export interface InstanceSettings {
  heartbeatMs: number
  staleAfterMs: number
}

/** Rows of stopped instances are kept this long (ownership history for operators), then pruned. */
const KEEP_STOPPED_MS = 7 * 24 * 60 * 60_000

/** True while a process with this pid runs on this host (a zombie counts as gone). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true
  }
}

/** This control plane among the instances sharing the database. */
export class ControlPlaneInstance {
  readonly id = newId('cpi')
  readonly host = hostname()
  readonly pid = process.pid
  readonly #db: Kysely<ControlPlaneDb>
  readonly #now: () => number
  readonly #settings: InstanceSettings
  readonly #log: Logger
  #timer: ReturnType<typeof setInterval> | undefined
  #beating: Promise<void> | null = null

  constructor(options: { db: Kysely<ControlPlaneDb>; now: () => number; settings: InstanceSettings; logger: Logger }) {
    this.#db = options.db
    this.#now = options.now
    this.#settings = options.settings
    this.#log = options.logger
  }

  /** Registers this instance and starts its heartbeat. */
  async register(): Promise<void> {
    const now = iso(this.#now())
    await this.#db
      .insertInto('control_plane_instance')
      .values({ id: this.id, host: this.host, pid: this.pid, started_at: now, heartbeat_at: now, stopped_at: null })
      .execute()
    await this.#db
      .deleteFrom('control_plane_instance')
      .where('stopped_at', '<', iso(this.#now() - KEEP_STOPPED_MS))
      .execute()
    // Its own timer, not the job loop: a long sweep or claim must not make this instance look dead.
    this.#timer = setInterval(() => {
      if (this.#beating) return
      this.#beating = this.beat()
        .catch((error) =>
          this.#log.warn('control-plane instance heartbeat failed', { error: (error as Error).message }),
        )
        .finally(() => {
          this.#beating = null
        })
    }, this.#settings.heartbeatMs)
  }

  /** Renews the heartbeat (and revives the row if another instance wrongly declared this one gone). */
  async beat(): Promise<void> {
    await this.#db
      .updateTable('control_plane_instance')
      .set({ heartbeat_at: iso(this.#now()), stopped_at: null })
      .where('id', '=', this.id)
      .execute()
  }

  /** Stops the heartbeat and records a graceful stop. */
  async stop(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    // A beat in flight would clear stopped_at again after this write.
    await this.#beating
    await this.#db
      .updateTable('control_plane_instance')
      .set({ stopped_at: iso(this.#now()) })
      .where('id', '=', this.id)
      .execute()
  }

  /** Whether `row` is a running instance, judged from here. */
  isLive(row: ControlPlaneInstanceTable): boolean {
    if (row.id === this.id) return true
    if (row.stopped_at !== null) return false
    if (row.heartbeat_at < iso(this.#now() - this.#settings.staleAfterMs)) return false
    // Same host: the process table answers at once (a pid equal to ours is a previous incarnation,
    // e.g. pid 1 in a restarted container).
    if (row.host === this.host && (row.pid === this.pid || !processAlive(row.pid))) return false
    return true
  }

  /** One instance row, or undefined when unknown. */
  async find(id: string): Promise<ControlPlaneInstanceTable | undefined> {
    return this.#db.selectFrom('control_plane_instance').selectAll().where('id', '=', id).executeTakeFirst()
  }

  /** Whether the instance `id` is running (an unknown id is not). */
  async isLiveId(id: string): Promise<boolean> {
    if (id === this.id) return true
    const row = await this.find(id)
    return !!row && this.isLive(row)
  }

  /**
   * Instances that are gone but not yet recorded as stopped; each is marked stopped here with a
   * conditional update, so only one instance acts on a given death.
   */
  async markGone(): Promise<ControlPlaneInstanceTable[]> {
    const rows = await this.#db
      .selectFrom('control_plane_instance')
      .selectAll()
      .where('stopped_at', 'is', null)
      .execute()
    const gone: ControlPlaneInstanceTable[] = []
    for (const row of rows) {
      if (this.isLive(row)) continue
      const now = iso(this.#now())
      const moved = await this.#db
        .updateTable('control_plane_instance')
        .set({ stopped_at: now })
        .where('id', '=', row.id)
        .where('stopped_at', 'is', null)
        .where('heartbeat_at', '=', row.heartbeat_at)
        .executeTakeFirst()
      if (Number(moved.numUpdatedRows) === 1) {
        this.#log.warn('a control-plane instance stopped heartbeating; its Workers are taken over', {
          instanceId: row.id,
          host: row.host,
          lastHeartbeatAt: row.heartbeat_at,
        })
        gone.push({ ...row, stopped_at: now })
      }
    }
    return gone
  }
}
