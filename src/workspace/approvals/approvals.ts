/**
 * Write approvals (spec §3): in `manual` mode a write is held until the host allows or denies it,
 * or until the timeout passes; in `auto` mode it proceeds at once. Unlike the reference, the host
 * does not have to poll: every request and decision is an event (on `/approvals/events` and the
 * workspace's own stream), and every decision, including a timeout, is audited.
 * @module
 */
import type { ApiError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import type { AuditActor, AuditLog } from '../events/audit-log.ts'
import type { EventStore } from '../events/event-store.ts'
import type { DescribedChange } from './change-description.ts'
import { workspaceError } from '../workspace-errors.ts'

/** A pending write as the host sees it. */
export interface ApprovalRequest {
  id: string
  workspaceId: string
  action: string
  summary: string
  /** Absolute paths the write would touch. */
  paths: string[]
  createdAt: number
  actor: AuditActor
  /** What the write would change, per path (writes through the write gate; absent for other requests). */
  changes?: DescribedChange[]
}

/** How a request ended. */
export type ApprovalOutcome =
  | { id: string; allowed: true }
  | { id: string; allowed: false; reason: 'denied' | 'timeout' | 'cancelled' }

/** Approval posture (config `approval`). */
export interface ApprovalSettings {
  mode: 'manual' | 'auto'
  timeoutMs: number
}

const VERB = { allowed: 'allow', denied: 'deny', timeout: 'timeout', cancelled: 'cancel' } as const
const LABEL = {
  allowed: 'Allowed',
  denied: 'Denied',
  timeout: 'Timed out',
  cancelled: 'Withdrawn (client disconnected)',
} as const

/** What a write waiting for the host gets when the server stops: retry once it is back. */
export const serverStopping = () =>
  workspaceError('server_stopping', 'The server is stopping; the write was not made, retry when it is back', {
    headers: { 'retry-after': '5' },
  })

/** Most writes that may wait for the host at once. */
export const MAX_PENDING = 256

interface Pending {
  request: ApprovalRequest
  resolve(outcome: ApprovalOutcome): void
  reject(error: ApiError): void
  timer: ReturnType<typeof setTimeout>
}

/** Holds pending approvals in memory (a restart denies them by ending their requests). */
export class ApprovalService {
  readonly settings: ApprovalSettings
  readonly #events: EventStore
  readonly #audit: AuditLog
  readonly #now: () => number
  readonly #pending = new Map<string, Pending>()
  #closed = false

  constructor(settings: ApprovalSettings, deps: { events: EventStore; audit: AuditLog; now?: () => number }) {
    this.settings = settings
    this.#events = deps.events
    this.#audit = deps.audit
    this.#now = deps.now ?? Date.now
  }

  /** Pending requests, oldest first. */
  list(): ApprovalRequest[] {
    return [...this.#pending.values()].map((p) => p.request)
  }

  /**
   * Asks for approval; resolves when allowed, denied or timed out. When `signal` aborts (the
   * client went away) the request is withdrawn, so the host is never asked about a dead write.
   */
  async request(input: Omit<ApprovalRequest, 'id' | 'createdAt'>, signal?: AbortSignal): Promise<ApprovalOutcome> {
    if (this.settings.mode === 'auto') return { id: 'auto', allowed: true }
    if (this.#closed) throw serverStopping()
    // Each pending write holds a connection and a timer; an unattended host must not let them pile up.
    if (this.#pending.size >= MAX_PENDING) {
      throw workspaceError('too_many_pending_approvals', `${MAX_PENDING} writes already await approval`, {
        headers: { 'retry-after': String(Math.ceil(this.settings.timeoutMs / 1000)) },
      })
    }
    const request: ApprovalRequest = { id: newId('apr'), createdAt: this.#now(), ...input }
    let resolveOutcome!: (outcome: ApprovalOutcome) => void
    let rejectOutcome!: (error: ApiError) => void
    const outcome = new Promise<ApprovalOutcome>((resolve, reject) => {
      resolveOutcome = resolve
      rejectOutcome = reject
    })
    const timer = setTimeout(() => {
      void this.#finish(request.id, { id: request.id, allowed: false, reason: 'timeout' }, null)
    }, this.settings.timeoutMs)
    this.#pending.set(request.id, { request, resolve: resolveOutcome, reject: rejectOutcome, timer })
    const withdraw = () => {
      void this.#finish(request.id, { id: request.id, allowed: false, reason: 'cancelled' }, null)
    }
    signal?.addEventListener('abort', withdraw, { once: true })
    await this.#events.append({
      workspaceId: request.workspaceId,
      type: 'approval.requested',
      approval: { ...request },
    })
    if (signal?.aborted) withdraw()
    return outcome.finally(() => signal?.removeEventListener('abort', withdraw))
  }

  /** Applies the host's reply; null when the id is unknown or already decided. */
  async decide(id: string, reply: 'allow' | 'deny', by: AuditActor): Promise<{ allowed: boolean } | null> {
    const allowed = reply === 'allow'
    const done = await this.#finish(id, allowed ? { id, allowed: true } : { id, allowed: false, reason: 'denied' }, by)
    return done ? { allowed } : null
  }

  async #finish(id: string, outcome: ApprovalOutcome, by: AuditActor | null): Promise<boolean> {
    const pending = this.#pending.get(id)
    if (!pending) return false
    this.#pending.delete(id)
    clearTimeout(pending.timer)
    const { request } = pending
    const reason = outcome.allowed ? 'allowed' : outcome.reason
    try {
      await this.#audit.record({
        workspaceId: request.workspaceId,
        actor: by ?? { type: 'host', scope: null },
        action: `approval.${VERB[reason]}`,
        target: request.id,
        summary: `${LABEL[reason]}: ${request.summary} (${request.action})`,
      })
      await this.#events.append({
        workspaceId: request.workspaceId,
        type: 'approval.decided',
        approval: { ...request },
        decision: { allowed: outcome.allowed, reason, ...(by ? { by } : {}) },
      })
    } finally {
      // The waiting write is released even if bookkeeping failed; its outcome does not depend on it.
      pending.resolve(outcome)
    }
    return true
  }

  /**
   * Shutdown, first step (before the listener stops): refuses new requests, records every pending
   * one as cancelled (audit entry and `approval.decided` event, so the host sees why it vanished)
   * and answers its waiting write 503 `server_stopping` while the connection is still open.
   */
  async stop(): Promise<void> {
    this.#closed = true
    const pending = [...this.#pending.values()]
    this.#pending.clear()
    await Promise.all(
      pending.map(async ({ request, reject, timer }) => {
        clearTimeout(timer)
        try {
          await this.#audit.record({
            workspaceId: request.workspaceId,
            actor: { type: 'host', scope: null },
            action: 'approval.cancel',
            target: request.id,
            summary: `Withdrawn (server stopping): ${request.summary} (${request.action})`,
          })
          await this.#events.append({
            workspaceId: request.workspaceId,
            type: 'approval.decided',
            approval: { ...request },
            decision: { allowed: false, reason: 'cancelled', stopping: true },
          })
        } finally {
          reject(serverStopping())
        }
      }),
    )
  }

  /** Ends whatever is still pending without bookkeeping (storage is closing); {@link stop} comes first. */
  close(): void {
    this.#closed = true
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer)
      this.#pending.delete(id)
      pending.reject(serverStopping())
    }
  }
}
