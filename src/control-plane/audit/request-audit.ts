/**
 * One audit event per state-changing request, kept by a {@link RequestAudit} that lives for the
 * request (the composition root starts it, `audited-surface.ts`). It is the request's
 * {@link CommitObserver}, so every transaction the request runs tells it when it is about to commit:
 *
 * - A handler that records its own, richer event (`recordAudit`, e.g. `team.created`) tells it so;
 *   that transaction then carries no other event, and a generic event an earlier transaction of the
 *   request committed is deleted by it, so the request still has one event.
 * - Otherwise the first transaction inserts the generic event (action = the route's operationId),
 *   so the change and its event commit together; a later transaction updates it when the request
 *   learnt who the actor is meanwhile (sign-up).
 * - When the request has its answer: a success with no event yet (a write outside any transaction)
 *   gets one now; a failure or refusal marks the generic event, or writes its own event after the
 *   rollback.
 *
 * Only facts known without reading the body are recorded: the credential, the route template and
 * its path parameters (names that look secret are masked), the answer's status and error code.
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import { currentCommitObserver, type CommitObserver } from '../../storage/transaction-scope.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** Where a request came from. */
export type AuditOrigin = 'api' | 'console' | 'mcp' | 'scim' | 'sso'

/** How a request ended. */
export type AuditOutcome = 'success' | 'denied' | 'failed'

/** Who acts, as far as the request has told. */
export interface AuditActorFacts {
  credential: string
  userId: string | null
  memberId: string | null
  apiKeyId: string | null
  orgId: string | null
}

/** What the request is, known once it is routed. */
export interface AuditRequestFacts {
  requestId: string
  /** `METHOD /declared/:path`. */
  route: string
  /** The route's operationId: the action of a generic event. */
  action: string
  target: { type: string; id: string }
  origin: AuditOrigin
}

/** The answer's facts a failure event records. */
export interface AuditAnswer {
  status: number
  code: string | null
}

/** The audit of one request; see the module comment. */
export class RequestAudit implements CommitObserver {
  ended = false
  actor: AuditActorFacts = { credential: 'anonymous', userId: null, memberId: null, apiKeyId: null, orgId: null }
  /** True once the credential was verified (even when the caller was then refused). */
  identified = false
  #actorChanged = false
  #handlerRows = 0
  #pendingHandlerRows = 0
  #genericId: string | null = null
  #pending: { kind: 'insert'; id: string } | { kind: 'update' } | { kind: 'delete' } | null = null

  /**
   * @param quietSuccess the route's successful requests carry no event of their own (only what its
   * handler records): a Worker's heartbeat, an MCP message (its write tools record theirs).
   */
  constructor(
    readonly deps: Deps,
    readonly facts: AuditRequestFacts,
    readonly quietSuccess = false,
  ) {}

  /** Records who acts; a generic event already written is brought up to date. */
  noteActor(actor: Partial<AuditActorFacts>, identified = true): void {
    for (const [key, value] of Object.entries(actor) as Array<[keyof AuditActorFacts, string | null | undefined]>) {
      if (value !== undefined && this.actor[key] !== value) {
        ;(this.actor as unknown as Record<string, string | null>)[key] = value
        this.#actorChanged = true
      }
    }
    if (identified) this.identified = true
  }

  /** A handler recorded its own event, in a transaction (`inTransaction`) or as a statement of its own. */
  noteHandlerEvent(inTransaction: boolean): void {
    if (inTransaction) this.#pendingHandlerRows++
    else this.#handlerRows++
  }

  /** True when some event of this request has committed. */
  get recorded(): boolean {
    return this.#handlerRows > 0 || this.#genericId !== null
  }

  async beforeCommit(trx: Kysely<any>): Promise<void> {
    const db = trx as Kysely<ControlPlaneDb>
    if (this.#pendingHandlerRows > 0) {
      if (this.#genericId !== null) {
        await db.deleteFrom('audit_event').where('id', '=', this.#genericId).execute()
        this.#pending = { kind: 'delete' }
      }
      return
    }
    if (this.#handlerRows > 0 || this.quietSuccess) return
    if (this.#genericId === null) {
      const id = newId('aev')
      await db
        .insertInto('audit_event')
        .values(this.row(id, 'success', null))
        .execute()
      this.#pending = { kind: 'insert', id }
      this.#actorChanged = false
    } else if (this.#actorChanged) {
      await db.updateTable('audit_event').set(this.actorColumns()).where('id', '=', this.#genericId).execute()
      this.#pending = { kind: 'update' }
      this.#actorChanged = false
    }
  }

  committed(): void {
    const pending = this.#pending
    if (pending?.kind === 'insert') this.#genericId = pending.id
    else if (pending?.kind === 'delete') this.#genericId = null
    this.#handlerRows += this.#pendingHandlerRows
    this.#pendingHandlerRows = 0
    this.#pending = null
  }

  rolledBack(): void {
    // The transaction's writes are gone; if it had learnt the actor, the next write still must tell.
    if (this.#pending?.kind === 'insert' || this.#pending?.kind === 'update') this.#actorChanged = true
    this.#pendingHandlerRows = 0
    this.#pending = null
  }

  /**
   * Finishes the request's audit once it has its answer, with its own small write when needed.
   * `record` false: the request is not audited (a caller that never proved who it is).
   */
  async finish(answer: AuditAnswer, record: boolean): Promise<void> {
    this.ended = true
    if (!record) return
    const db = this.deps.db
    const failed = answer.status >= 400
    const outcome: AuditOutcome = !failed
      ? 'success'
      : answer.status === 401 || answer.status === 403
        ? 'denied'
        : 'failed'
    if (!failed && (this.#handlerRows > 0 || this.quietSuccess)) return
    if (this.#genericId !== null) {
      if (!failed && !this.#actorChanged) return
      await db
        .updateTable('audit_event')
        .set({ ...this.actorColumns(), outcome, error_code: failed ? (answer.code ?? `http_${answer.status}`) : null })
        .where('id', '=', this.#genericId)
        .execute()
      return
    }
    // A failure after the handler's own event committed: the change it recorded was made.
    if (this.#handlerRows > 0) return
    await db
      .insertInto('audit_event')
      .values(this.row(newId('aev'), outcome, failed ? (answer.code ?? `http_${answer.status}`) : null))
      .execute()
  }

  private actorColumns() {
    return {
      org_id: this.actor.orgId,
      actor_user_id: this.actor.userId,
      actor_member_id: this.actor.memberId,
      credential_kind: this.actor.credential,
      api_key_id: this.actor.apiKeyId,
    }
  }

  private row(id: string, outcome: AuditOutcome, errorCode: string | null): ControlPlaneDb['audit_event'] {
    const { facts } = this
    return {
      id,
      ...this.actorColumns(),
      action: facts.action,
      target_type: facts.target.type,
      target_id: facts.target.id,
      data: null,
      created_at: isoAt(this.deps),
      origin: facts.origin,
      outcome,
      error_code: errorCode,
      request_id: facts.requestId,
      route: facts.route,
    }
  }
}

/** The audit of the request running now, if any. */
export function currentRequestAudit(): RequestAudit | undefined {
  const observer = currentCommitObserver()
  return observer instanceof RequestAudit ? observer : undefined
}

/**
 * Tells the running request's audit who acts, where only the domain knows (sign-in: the account the
 * email names, also when the password is wrong; sign-up: the new account). No-op outside a request.
 */
export function noteAuditActor(actor: Partial<AuditActorFacts>): void {
  currentRequestAudit()?.noteActor(actor, false)
}

/** The parts of an authenticated principal an event records (structural: auth imports this module). */
export interface PrincipalFacts {
  credential: string
  user: { id: string } | null
  apiKeyId: string | null
  org: { id: string; memberId: string } | null
  worker?: { orgId: string } | null
  /** An identity provider's SCIM token (`credential: 'scim'`), which belongs to one organization. */
  scim?: { orgId: string } | null
}

/** Tells the running request's audit which credential was verified (before any permission check). */
export function noteAuditPrincipal(principal: PrincipalFacts): void {
  const audit = currentRequestAudit()
  if (!audit || principal.credential === 'none') return
  audit.noteActor({
    credential: principal.credential,
    userId: principal.user?.id ?? null,
    memberId: principal.org?.memberId ?? null,
    apiKeyId: principal.apiKeyId,
    orgId: principal.org?.id ?? principal.worker?.orgId ?? principal.scim?.orgId ?? null,
  })
}
