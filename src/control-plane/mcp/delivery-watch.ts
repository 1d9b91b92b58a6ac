/**
 * One session's view of its caller's delivered set, kept current by the change feed.
 *
 * The session follows its organization's feed (woken through `ChangeSubscriptions`, which
 * PostgreSQL's NOTIFY feeds from every instance) and reads only what concerns its member; when a
 * `delivery.changed` arrives it recomputes the set, and tells the client
 * `notifications/resources/list_changed` when resources appeared or went away and
 * `notifications/resources/updated` for each subscribed resource whose content changed. Reads are
 * served from the last computed set, which is recomputed on every such change, so a read never
 * shows a skill the member no longer receives once its change has reached this instance.
 * @module
 */
import type { Actor } from '../admin/audit.ts'
import type { Deps } from '../deps.ts'
import { deliveredSet, type DeliveryPrincipal, type DeliverySet } from '../delivery/delivered-set.ts'
import { DELIVERY_CHANGED } from '../delivery/delivery-feed-filter.ts'
import { latestSeq, readChanges, type ChangeSubscriptions } from '../events/change-feed.ts'
import { fingerprints } from './skill-resources.ts'

/** How the watch reaches the client. */
export interface WatchNotifier {
  listChanged(): Promise<void>
  updated(uri: string): Promise<void>
  /** Called when a change may have ended the caller's access (a member removed, a role changed). */
  recheck(): Promise<void>
}

/** Feed kinds after which the session's credential is checked again. */
const ACCESS_KINDS = new Set(['member.removed', 'member.role_changed', 'visibility.changed'])

/** Subscribed URIs per session at most (each costs a map entry and a comparison per change). */
export const MAX_SUBSCRIPTIONS = 1000

/**
 * A wake-up can arrive before the change is readable (SQLite announces in process before its
 * commit), so each wake-up reads again this much later; and a session re-reads this often even
 * without one, so a lost wake-up costs latency, never a change.
 */
const SETTLE_MS = 250
const FALLBACK_POLL_MS = 15_000

/** A session's delivered set and the subscriptions on it. */
export class DeliveryWatch {
  readonly subscriptions = new Set<string>()
  #set: Promise<DeliverySet> | null = null
  #prints: Map<string, string> | null = null
  #after: number | null = null
  #running = false
  #again = false
  #unsubscribe: (() => void) | null = null
  #poll: ReturnType<typeof setInterval> | null = null
  #settle: ReturnType<typeof setTimeout> | null = null
  #closed = false

  constructor(
    private readonly deps: Deps,
    private readonly who: () => { actor: Actor; principal: DeliveryPrincipal },
    private readonly notify: WatchNotifier,
  ) {}

  /** Starts following the organization's feed from now. */
  async start(changes: ChangeSubscriptions, orgId: string): Promise<void> {
    this.#after = await latestSeq(this.deps.db, orgId)
    if (this.#closed) return
    this.#unsubscribe = changes.subscribe(orgId, () => {
      void this.#pump()
      this.#settle ??= setTimeout(() => {
        this.#settle = null
        void this.#pump()
      }, SETTLE_MS)
    })
    this.#poll = setInterval(() => void this.#pump(), FALLBACK_POLL_MS)
    ;(this.#poll as { unref?: () => void }).unref?.()
  }

  /** The caller's delivered set (computed once, then again only after a delivery change). */
  current(): Promise<DeliverySet> {
    if (!this.#set) {
      const pending = deliveredSet(this.deps, this.who().principal)
      this.#set = pending
      pending.then(
        (set) => {
          if (this.#set === pending && !this.#prints) this.#prints = fingerprints(set)
        },
        () => {
          // A failed computation is not kept: the next read tries again.
          if (this.#set === pending) this.#set = null
        },
      )
    }
    return this.#set
  }

  /** Stops following the feed. */
  close(): void {
    this.#closed = true
    this.#unsubscribe?.()
    this.#unsubscribe = null
    if (this.#poll) clearInterval(this.#poll)
    if (this.#settle) clearTimeout(this.#settle)
    this.#poll = this.#settle = null
  }

  /** Reads the feed after the last position; one read at a time, wake-ups during it run one more. */
  async #pump(): Promise<void> {
    if (this.#running) {
      this.#again = true
      return
    }
    this.#running = true
    try {
      do {
        this.#again = false
        let changed = false
        let access = false
        const { actor } = this.who()
        for (;;) {
          const page = await readChanges(this.deps.db, actor, this.#after ?? 0, 200)
          if (page.items.some((item) => item.kind === DELIVERY_CHANGED)) changed = true
          if (page.items.some((item) => ACCESS_KINDS.has(item.kind))) access = true
          const moved = page.next > (this.#after ?? 0)
          this.#after = page.next
          if (!moved || page.items.length < 200) break
        }
        if (access && !this.#closed) await this.notify.recheck()
        if (changed && !this.#closed) await this.#refresh()
      } while (this.#again && !this.#closed)
    } catch {
      // The database is unavailable for a moment: the next wake-up reads from the same position.
    } finally {
      this.#running = false
    }
  }

  /** Recomputes the set and tells the client what changed. */
  async #refresh(): Promise<void> {
    const before = this.#prints
    const pending = deliveredSet(this.deps, this.who().principal)
    const set = await pending
    this.#set = pending
    const after = fingerprints(set)
    this.#prints = after
    if (this.#closed) return
    const sameKeys = before !== null && before.size === after.size && [...before.keys()].every((k) => after.has(k))
    if (!sameKeys) await this.notify.listChanged()
    for (const uri of this.subscriptions) if (before?.get(uri) !== after.get(uri)) await this.notify.updated(uri)
  }
}
