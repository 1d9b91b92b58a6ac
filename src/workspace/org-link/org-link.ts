/**
 * One workspace's live link to its organization. It follows the control plane's feed
 * (`GET /v1/events`, resuming with the persisted `Last-Event-ID`), reconciles fully whenever the
 * feed (re)opens (start, restart, any gap) and re-reads `GET /v1/me/delivery` on every event,
 * applying a change set only when the set's digest moved. Change sets go through the workspace's
 * write gate (approval in manual mode, one request per change set with the diff; the workspace
 * lock; the audit log) and are written all-or-nothing by the import writer.
 *
 * Faults: a control plane that cannot be reached is `unreachable` and retried with capped
 * exponential backoff and jitter (nothing is removed meanwhile); 401/403 (token revoked,
 * member removed) is `revoked` after one refresh attempt, and delivered files stay until the host
 * unlinks. State changes and applied change sets are workspace events (`org.state`, `org.applied`).
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { SkillLimits } from '../../opencode/skill-bundle.ts'
import type { Principal } from '../access/auth.ts'
import type { WriteGate } from '../approvals/write-gate.ts'
import { actorOf, type AuditLog } from '../events/audit-log.ts'
import type { EventStore } from '../events/event-store.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import { ApiError } from '../../core/errors.ts'
import { type ClientLimits, ControlPlaneClient, ControlPlaneError } from './control-plane-client.ts'
import { type DeliveredSet, parseDelivery } from './delivered-set.ts'
import { LinkRecordSaver } from './link-record-saver.ts'
import { LinkToken } from './link-token.ts'
import type { OrgLinkRecord, OrgLinkStore } from './org-link-state.ts'
import { backoffDelay, sleeper } from './backoff.ts'
import { writeChangeSet } from './change-set-write.ts'
import { planSync, type SyncPlan } from './sync-plan.ts'
import { applyProviders } from './worker-providers.ts'

/** The link's state as `GET /workspace/:id/org` reports it. */
export type OrgLinkState = 'linking' | 'syncing' | 'in_sync' | 'conflict' | 'revoked' | 'unreachable'

/** Retry timing (tests shorten it). */
export interface LinkTiming {
  backoffInitialMs: number
  backoffMaxMs: number
  client: ClientLimits
}

/** What a link needs from the server. */
export interface OrgLinkDeps {
  workspace: WorkspaceRuntime
  store: OrgLinkStore
  gate: WriteGate
  events: EventStore
  audit: AuditLog
  logger: Logger
  skillLimits: SkillLimits
  now: () => number
  timing: LinkTiming
  /** Called after a change set was written (the server reloads the workspace's OpenCode instance). */
  onApplied?: (workspaceId: string) => void
  /** A Worker's link: where its model providers go (see `worker-providers.ts`); null otherwise. */
  providersFile?: string | null
}

/** The principal background syncs write as (audited as the host, client `org-link`). */
export const LINK_PRINCIPAL: Principal = { type: 'host', scope: null, clientId: 'org-link' }

/** A running link of one workspace. */
export class OrgLink {
  state: OrgLinkState = 'syncing'
  lastError: { code: string; message: string; at: number } | null = null
  readonly client: ControlPlaneClient
  #record: OrgLinkRecord
  readonly #token: LinkToken
  readonly #saver: LinkRecordSaver
  #abort = new AbortController()
  #loop: Promise<void> | null = null
  #runner: Promise<void> | null = null
  #wanted = false
  #full = false
  #force = new Set<string>()
  #keep = new Map<string, string>()
  #declinedDigest: string | null = null
  #backoff = sleeper()

  constructor(
    private readonly deps: OrgLinkDeps,
    record: OrgLinkRecord,
    token: string,
    /** `skip` for a Worker: the organization owns the Worker's workspace, nobody is there to approve. */
    private readonly approval: 'required' | 'skip' = 'required',
  ) {
    this.#record = record
    this.client = new ControlPlaneClient(record.controlPlaneUrl, deps.timing.client, deps.now)
    this.#saver = new LinkRecordSaver(record, deps.store, deps.logger)
    this.#token = new LinkToken(token, record, { client: this.client, store: deps.store, saver: this.#saver })
    if (record.revoked) this.state = 'revoked'
  }

  /** The persisted record (read-only use). */
  get record(): Readonly<OrgLinkRecord> {
    return this.#record
  }

  /** Starts following the feed (unless revoked). */
  start(): void {
    if (this.#loop || this.#record.revoked) return
    this.#abort = new AbortController()
    this.#loop = this.#follow(this.#abort.signal).catch((error) =>
      this.deps.logger.error('organization link stopped unexpectedly', {
        workspaceId: this.#record.workspaceId,
        error: (error as Error).message,
      }),
    )
  }

  /** Stops following; waits for the running sync to end. */
  async stop(): Promise<void> {
    this.#abort.abort()
    this.#backoff.wake()
    await this.#loop
    this.#loop = null
    await this.#runner?.catch(() => {})
    await this.#saver.flush()
  }

  /** Replaces the token (re-link of a revoked workspace) and follows again. */
  async relink(
    token: string,
    sealed: Pick<OrgLinkRecord, 'sealedAccessToken' | 'sealedRefreshToken' | 'accessExpiresAt'>,
  ): Promise<void> {
    await this.stop()
    this.#token.replace(token)
    Object.assign(this.#record, sealed, { revoked: false })
    await this.#saver.save()
    await this.#setState('syncing')
    this.start()
  }

  /**
   * Runs a full reconcile now (waking a link that waits to retry) and resolves once it ran;
   * `force` adds conflict paths to take as the organization has them.
   */
  async syncNow(force: string[] = []): Promise<void> {
    for (const path of force) this.#force.add(path)
    this.#declinedDigest = null
    if (this.#record.revoked) {
      this.#record.revoked = false
      this.#token.reset()
    }
    this.#backoff.wake()
    await this.#request(true)
    if (!this.#loop && !this.#record.revoked) this.start()
  }

  /**
   * Keeps a conflicting path as the person has it: no longer managed, not raised again while the
   * organization offers the same content. Applied by the next reconcile (serialised with syncs,
   * so a change set planned before the choice cannot bring the conflict back).
   */
  async keepLocal(path: string): Promise<boolean> {
    const found = this.#record.conflicts.find((c) => c.path === path)
    if (!found) return false
    this.#keep.set(path, found.organizationSha256)
    await this.syncNow()
    return true
  }

  #request(full: boolean): Promise<void> {
    this.#wanted = true
    if (full) this.#full = true
    this.#runner ??= this.#drain().finally(() => {
      this.#runner = null
    })
    return this.#runner
  }

  async #drain(): Promise<void> {
    while (this.#wanted && !this.#abort.signal.aborted) {
      this.#wanted = false
      const full = this.#full
      this.#full = false
      await this.#syncOnce(full)
    }
  }

  async #follow(signal: AbortSignal): Promise<void> {
    let attempt = 0
    while (!signal.aborted && !this.#record.revoked) {
      try {
        await this.client.follow(
          this.#token.current,
          this.#record.lastEventId,
          {
            onOpen: () => {
              attempt = 0
              // Opening is a gap by definition (start, restart, reconnect): reconcile in full.
              void this.#request(true)
            },
            onEvent: (event) => {
              if (event.id) {
                this.#record.lastEventId = event.id
                this.#saver.soon()
              }
              void this.#request(false)
            },
          },
          signal,
        )
        // The control plane ended the stream (restart, token no longer allowed): reconnect at once;
        // a refused token shows up as 401 on the reconnect.
        if (!signal.aborted) await this.#backoff.sleep(backoffDelay(0, this.deps.timing), signal)
      } catch (error) {
        if (signal.aborted) return
        if (error instanceof ControlPlaneError && error.kind === 'revoked') {
          if (await this.#token.tryRefresh()) continue
          await this.#revoked(error)
          return
        }
        await this.#unreachable(error)
        await this.#backoff.sleep(backoffDelay(attempt++, this.deps.timing), signal)
      }
    }
  }

  async #syncOnce(full: boolean): Promise<void> {
    if (this.#record.revoked) return
    const record = this.#record
    const quiet = this.state === 'in_sync' || this.state === 'conflict'
    // A feed event re-plans only the items whose digest moved; start, gaps and the host's choices re-read all.
    const incremental = !full && !this.#force.size && !this.#keep.size
    try {
      if (!quiet || full) await this.#setState('syncing')
      let body: Record<string, unknown>
      try {
        body = await this.client.delivery(this.#token.current, this.#abort.signal)
      } catch (error) {
        if (!(error instanceof ControlPlaneError) || error.kind !== 'revoked' || !(await this.#token.tryRefresh()))
          throw error
        body = await this.client.delivery(this.#token.current, this.#abort.signal)
      }
      this.#token.reset()
      let set: DeliveredSet
      try {
        set = parseDelivery(body, this.deps.skillLimits, incremental ? record.itemDigests : {}, {
          providers: Boolean(this.deps.providersFile),
        })
      } catch (error) {
        throw new ControlPlaneError('invalid', `delivery document: ${(error as Error).message}`)
      }
      record.organization = set.organization
      record.member = set.principal
      if (!full && !this.#force.size && !this.#keep.size && set.digest === record.appliedDigest) {
        record.lastSyncAt = this.deps.now()
        this.#saver.soon()
        await this.#setState(this.#settledState())
        return
      }
      if (!full && set.digest === this.#declinedDigest) return
      await this.#apply(set, incremental)
    } catch (error) {
      if (this.#abort.signal.aborted) return
      if (error instanceof ControlPlaneError && error.kind === 'revoked') return this.#revoked(error)
      if (error instanceof ControlPlaneError) return this.#unreachable(error)
      if (error instanceof ApiError && error.code === 'write_conflict') {
        // A file changed while the change set waited for approval: plan again from the new disk.
        void this.#request(true)
        return
      }
      if (error instanceof ApiError && error.code === 'write_denied') {
        // Not asked again for the same set; a new set or POST …/org/sync asks again.
        this.#declinedDigest = this.#pendingDigest
        this.lastError = {
          code: 'write_denied',
          message: 'The host declined the change set; POST …/org/sync asks again',
          at: this.deps.now(),
        }
        await this.#setState('syncing', true)
        return
      }
      this.lastError = {
        code: error instanceof ApiError ? error.code : 'sync_failed',
        message: error instanceof ApiError ? error.message : 'The change set could not be applied; see the server log',
        at: this.deps.now(),
      }
      this.deps.logger.error('organization change set failed', {
        workspaceId: record.workspaceId,
        error: (error as Error).message,
      })
      await this.#setState('syncing', true)
    }
  }

  #pendingDigest: string | null = null

  async #apply(set: DeliveredSet, incremental: boolean): Promise<void> {
    const record = this.#record
    const ws = this.deps.workspace
    const root = ws.entry.path
    // Choices made while an incremental plan was under way wait for the full plan they asked for.
    const force = incremental ? new Set<string>() : new Set(this.#force)
    const keep = incremental ? new Map<string, string>() : new Map(this.#keep)
    for (const [path, sha] of keep) {
      record.keptLocal[path] = sha
      delete record.manifest[path]
      for (const key of Object.keys(record.manifest)) if (key.startsWith(`${path}/`)) delete record.manifest[key]
    }
    this.#pendingDigest = set.digest
    const plan = await planSync(root, set, record, { force, now: this.deps.now(), incremental })
    if (plan.changes.length)
      await this.#write(plan, `from ${set.organization.name}`, LINK_PRINCIPAL, this.approval, this.#abort.signal)
    if (this.deps.providersFile) {
      const providers = await applyProviders(this.deps.providersFile, set.items, record.manifest)
      Object.assign(plan.manifest, providers.manifest)
      if (providers.changed) this.deps.onApplied?.(ws.entry.id)
    }
    for (const path of force) this.#force.delete(path)
    for (const path of keep.keys()) this.#keep.delete(path)
    record.manifest = plan.manifest
    record.conflicts = plan.conflicts
    record.keptLocal = plan.keptLocal
    record.appliedDigest = set.digest
    record.itemDigests = plan.itemDigests
    record.lastSyncAt = this.deps.now()
    this.lastError = set.rejected.length
      ? {
          code: 'items_refused',
          message: `Refused ${set.rejected.length} item(s): ${set.rejected
            .slice(0, 3)
            .map((r) => `${r.name || r.objectId}: ${r.reason}`)
            .join('; ')}`,
          at: this.deps.now(),
        }
      : null
    this.rejected = set.rejected
    await this.#saver.save()
    if (plan.changes.length || plan.conflicts.length)
      await this.deps.events.append({
        workspaceId: record.workspaceId,
        type: 'org.applied',
        org: { digest: set.digest, ...plan.counts, conflicts: plan.conflicts.length, refused: set.rejected.length },
      })
    await this.#setState(this.#settledState())
  }

  /** Items the last delivery carried that were refused. */
  rejected: DeliveredSet['rejected'] = []

  /** Writes a change set through the gate, all-or-nothing, and reloads the workspace's OpenCode. */
  async #write(
    plan: SyncPlan,
    what: string,
    principal: Principal,
    approval: 'required' | 'skip',
    signal?: AbortSignal,
  ): Promise<void> {
    const ws = this.deps.workspace
    await writeChangeSet({ gate: this.deps.gate, logger: this.deps.logger, workspace: ws }, plan, {
      what,
      principal,
      approval,
      signal,
      target: this.#record.organization?.name ?? this.#record.controlPlaneUrl,
    })
    this.deps.onApplied?.(ws.entry.id)
  }

  /**
   * Unlinks: stops following and, with `remove`, deletes the managed files that are unchanged on
   * disk (edited ones stay, as the person's) through the gate as `principal`.
   */
  async unlink(principal: Principal, remove: boolean, signal?: AbortSignal): Promise<number> {
    await this.stop()
    if (!remove) return 0
    const empty: DeliveredSet = {
      digest: '',
      organization: { id: '', name: '' },
      principal: {},
      items: [],
      rejected: [],
    }
    const plan = await planSync(this.deps.workspace.entry.path, empty, this.#record, { now: this.deps.now() })
    if (plan.changes.length) await this.#write(plan, 'removed on unlink', principal, 'required', signal)
    return plan.counts.delete
  }

  #settledState(): OrgLinkState {
    if (this.#record.revoked) return 'revoked'
    return this.#record.conflicts.length ? 'conflict' : 'in_sync'
  }

  async #revoked(error: ControlPlaneError): Promise<void> {
    this.#record.revoked = true
    this.lastError = { code: 'org_token_refused', message: error.message, at: this.deps.now() }
    await this.#saver.save()
    await this.#setState('revoked', true)
  }

  async #unreachable(error: unknown): Promise<void> {
    const message = error instanceof ControlPlaneError ? error.message : 'control plane request failed'
    const code =
      error instanceof ControlPlaneError && error.kind === 'invalid' ? 'org_answer_invalid' : 'org_unreachable'
    this.lastError = { code, message, at: this.deps.now() }
    await this.#setState('unreachable', true)
  }

  #settle: (() => void) | null = null
  readonly #settled = new Promise<void>((resolve) => {
    this.#settle = resolve
  })

  /** Resolves the first time a sync ends in step with the organization (or the token is refused). */
  settled(): Promise<void> {
    return this.#settled
  }

  async #setState(next: OrgLinkState, withError = false): Promise<void> {
    const previous = this.state
    this.state = next
    if (next === 'in_sync' || next === 'conflict' || next === 'revoked') this.#settle?.()
    if (previous === next) return
    await this.deps.events
      .append({
        workspaceId: this.#record.workspaceId,
        type: 'org.state',
        org: {
          state: next,
          previous,
          ...(withError && this.lastError
            ? { error: { code: this.lastError.code, message: this.lastError.message } }
            : {}),
        },
      })
      .catch(() => {})
  }

  /** Audits a link lifecycle step. */
  audit(principal: Principal, action: string, summary: string): Promise<unknown> {
    return this.deps.audit.record({
      workspaceId: this.#record.workspaceId,
      actor: actorOf(principal),
      action,
      target: this.#record.controlPlaneUrl,
      summary,
    })
  }
}
