/**
 * The organization links of every workspace of this server: linking by the device flow (RFC 8628;
 * the host approves the code in the control plane's console, the server polls in the background),
 * resuming links at start, the Worker's own link (no device flow: `SERVICE_CONTROL_PLANE_URL` and
 * `SERVICE_WORKER_ACTIVITY_TOKEN` from the provisioner), the view `GET /workspace/:id/org`
 * answers, conflict resolution and unlinking.
 * @module
 */
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import type { SkillLimits } from '../../opencode/skill-bundle.ts'
import type { SecretBox } from '../../storage/secret-box.ts'
import type { Principal } from '../access/auth.ts'
import type { WriteGate } from '../approvals/write-gate.ts'
import type { AuditLog } from '../events/audit-log.ts'
import type { EventStore } from '../events/event-store.ts'
import type { WorkspaceRegistry } from '../runtime/workspace-registry.ts'
import { workspaceError } from '../workspace-errors.ts'
import {
  ControlPlaneClient,
  ControlPlaneError,
  DEFAULT_CLIENT_LIMITS,
  type DeviceAuthorization,
  type IssuedTokens,
  normalizeControlPlaneUrl,
} from './control-plane-client.ts'
import type { LinkTiming, OrgLink } from './org-link.ts'
import { type OrgLinkRecord, OrgLinkStore } from './org-link-state.ts'
import { linkView, type OrgLinkView } from './org-link-view.ts'
import { workerActivityToken } from '../runtime/worker-activity-token.ts'

export type { OrgLinkView } from './org-link-view.ts'

/** Default retry timing: 1 s doubling to 60 s, with jitter. */
export const DEFAULT_LINK_TIMING: LinkTiming = {
  backoffInitialMs: 1000,
  backoffMaxMs: 60_000,
  client: DEFAULT_CLIENT_LIMITS,
}

interface Attempt {
  controlPlaneUrl: string
  authorization: DeviceAuthorization
  expiresAt: number
  abort: AbortController
  failed: { code: string; message: string } | null
}

/** Server-wide hooks. */
export interface OrgLinkServiceDeps {
  dataDir: string
  workspaces: WorkspaceRegistry
  gate: WriteGate
  events: EventStore
  audit: AuditLog
  logger: Logger
  skillLimits: SkillLimits
  now: () => number
  env: Record<string, string | undefined>
  /** Called after a change set was written to a workspace. */
  onApplied?: (workspaceId: string) => void
  timing?: Partial<LinkTiming> & { devicePollMs?: number }
}

/** Organization links of this server's workspaces. */
export class OrgLinkService {
  readonly #links = new Map<string, OrgLink>()
  readonly #attempts = new Map<string, Attempt>()
  readonly #timing: LinkTiming & { devicePollMs?: number }
  #worker: Promise<void> | null = null

  private constructor(
    private readonly deps: OrgLinkServiceDeps,
    private readonly store: OrgLinkStore,
  ) {
    this.#timing = { ...DEFAULT_LINK_TIMING, ...deps.timing }
  }

  /** Opens the store (secret box from `SERVICE_ENCRYPTION_KEY` or `<dataDir>/encryption.key`) and resumes links. */
  static async start(deps: OrgLinkServiceDeps): Promise<OrgLinkService> {
    let box: Promise<SecretBox> | undefined
    const loadBox = () =>
      (box ??= (async () => {
        const { loadSecretBox, secretBoxFromKey } = await import('../../storage/secret-box.ts')
        if (deps.dataDir === ':memory:') {
          const { randomBytes } = await import('node:crypto')
          return secretBoxFromKey(new Uint8Array(randomBytes(32)))
        }
        const keyFile = join(deps.dataDir, 'encryption.key')
        return (await loadSecretBox({ envKey: deps.env.SERVICE_ENCRYPTION_KEY, keyFile })).box
      })())
    const service = new OrgLinkService(deps, new OrgLinkStore(deps.dataDir, loadBox))
    const worker = workerLinkFromEnv(deps.env)
    for (const ws of deps.workspaces.all) {
      const record = await service.store.load(ws.entry.id)
      if (record?.via !== 'device' || !record.sealedAccessToken) continue
      let token: string
      try {
        token = await service.store.open(ws.entry.id, record.sealedAccessToken)
      } catch (error) {
        deps.logger.error('the organization token of a linked workspace does not open; link it again', {
          workspaceId: ws.entry.id,
          error: (error as Error).message,
        })
        continue
      }
      ;(await service.#open(record, token, 'required')).start()
    }
    if (worker && deps.workspaces.all[0]) service.#worker = service.#startWorker(worker)
    return service
  }

  /**
   * Opens a link. The engine (feed, planning, validation) is loaded on first use: a server whose
   * workspaces are not linked never evaluates it, which keeps its resident memory where it was.
   */
  async #open(
    record: OrgLinkRecord,
    token: string,
    approval: 'required' | 'skip',
    providersFile: string | null = null,
  ): Promise<OrgLink> {
    const { OrgLink } = await import('./org-link.ts')
    const ws = this.deps.workspaces.get(record.workspaceId)
    const link = new OrgLink(
      {
        workspace: ws,
        store: this.store,
        gate: this.deps.gate,
        events: this.deps.events,
        audit: this.deps.audit,
        logger: this.deps.logger,
        skillLimits: this.deps.skillLimits,
        now: this.deps.now,
        timing: this.#timing,
        onApplied: this.deps.onApplied,
        providersFile,
      },
      record,
      token,
      approval,
    )
    this.#links.set(record.workspaceId, link)
    return link
  }

  /**
   * Resolves once a Worker's first delivered set is on disk (or its token was refused), so its
   * heartbeat reports `healthy` only with its configuration in place; at once when not a Worker.
   */
  get workerReady(): Promise<void> {
    return this.#worker ?? Promise.resolve()
  }

  async #startWorker(env: { url: string; token: string }): Promise<void> {
    const ws = this.deps.workspaces.all[0]!
    const previous = await this.store.load(ws.entry.id)
    const record: OrgLinkRecord =
      previous?.via === 'worker' && previous.controlPlaneUrl === env.url
        ? { ...previous, revoked: false }
        : emptyRecord(ws.entry.id, env.url, 'worker', this.deps.now())
    await this.store.save(record)
    const link = await this.#open(record, env.token, 'skip', providersFileOf(this.deps.env))
    link.start()
    await link.settled()
  }

  /** Starts the device flow for a workspace; the link completes in the background once approved. */
  async beginLink(
    workspaceId: string,
    rawUrl: string,
    principal: Principal,
  ): Promise<OrgLinkView['linking'] & { expiresIn: number }> {
    this.deps.gate.ensureWritable()
    const ws = this.deps.workspaces.get(workspaceId)
    const url = normalizeControlPlaneUrl(rawUrl)
    if (!url)
      throw workspaceError(
        'invalid_control_plane_url',
        'controlPlaneUrl must be an http(s) URL without credentials, query or fragment',
      )
    const existing = this.#links.get(ws.entry.id)
    if (existing && existing.record.via === 'worker')
      throw workspaceError('org_link_managed', "A Worker's link is set by the control plane that runs it")
    // A revoked link may be renewed in place (manifest and choices kept); anything else is unlinked first.
    if (existing && (!existing.record.revoked || existing.record.controlPlaneUrl !== url))
      throw workspaceError(
        'org_already_linked',
        'This workspace is already linked; unlink it first, or link again once revoked',
      )
    this.#attempts.get(ws.entry.id)?.abort.abort()
    const client = new ControlPlaneClient(url, this.#timing.client, this.deps.now)
    let authorization: DeviceAuthorization
    try {
      authorization = await client.deviceAuthorization()
    } catch (error) {
      throw workspaceError(
        'org_unreachable',
        `The control plane did not start a device authorization: ${(error as Error).message}`,
      )
    }
    const attempt: Attempt = {
      controlPlaneUrl: url,
      authorization,
      expiresAt: this.deps.now() + authorization.expiresIn * 1000,
      abort: new AbortController(),
      failed: null,
    }
    this.#attempts.set(ws.entry.id, attempt)
    void this.#poll(ws.entry.id, client, attempt, principal)
    return {
      userCode: authorization.userCode,
      verificationUri: authorization.verificationUri,
      verificationUriComplete: authorization.verificationUriComplete,
      expiresIn: authorization.expiresIn,
      expiresAt: attempt.expiresAt,
    }
  }

  async #poll(workspaceId: string, client: ControlPlaneClient, attempt: Attempt, principal: Principal): Promise<void> {
    let interval = this.#timing.devicePollMs ?? attempt.authorization.interval * 1000
    const { signal } = attempt.abort
    const fail = (code: string, message: string) => {
      attempt.failed = { code, message }
      this.deps.logger.warn('organization link not completed', { workspaceId, code })
    }
    while (!signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, interval))
      if (signal.aborted) return
      if (this.deps.now() > attempt.expiresAt)
        return fail('org_link_expired', 'The code expired before it was approved')
      let poll
      try {
        poll = await client.pollDeviceToken(attempt.authorization.deviceCode, signal)
      } catch (error) {
        if (signal.aborted) return
        if (error instanceof ControlPlaneError && error.kind === 'unreachable') continue
        return fail('org_answer_invalid', (error as Error).message)
      }
      if (poll.status === 'pending') continue
      if (poll.status === 'slow_down') {
        interval += 5000
        continue
      }
      if (poll.status === 'denied') return fail('org_link_denied', 'The code was denied in the console')
      if (poll.status === 'expired') return fail('org_link_expired', 'The code expired before it was approved')
      try {
        await this.#complete(workspaceId, attempt, poll.tokens, principal)
      } catch (error) {
        // The key file cannot be read or the data dir written: say so; the token is not kept anywhere.
        this.deps.logger.error('storing the organization token failed', {
          workspaceId,
          error: (error as Error).message,
        })
        return fail('org_link_failed', 'The token could not be stored; see the server log')
      }
      return
    }
  }

  async #complete(id: string, attempt: Attempt, tokens: IssuedTokens, principal: Principal): Promise<void> {
    const sealed = {
      sealedAccessToken: await this.store.seal(id, tokens.accessToken),
      sealedRefreshToken: tokens.refreshToken ? await this.store.seal(id, tokens.refreshToken) : null,
      accessExpiresAt: tokens.expiresAt,
    }
    const existing = this.#links.get(id)
    if (existing) {
      await existing.relink(tokens.accessToken, sealed)
    } else {
      // Manifest and kept choices of an earlier link to the same control plane stay valid.
      const previous = await this.store.load(id)
      const record: OrgLinkRecord = {
        ...(previous?.controlPlaneUrl === attempt.controlPlaneUrl
          ? previous
          : emptyRecord(id, attempt.controlPlaneUrl, 'device', this.deps.now())),
        ...sealed,
        via: 'device',
        revoked: false,
        organization: tokens.organization,
        linkedAt: this.deps.now(),
      }
      await this.store.save(record)
      ;(await this.#open(record, tokens.accessToken, 'required')).start()
    }
    this.#attempts.delete(id)
    await this.#links
      .get(id)!
      .audit(principal, 'org.link', `Linked to ${tokens.organization?.name ?? attempt.controlPlaneUrl}`)
  }

  /** The link as the host sees it; 404 `org_not_linked` (with a failed attempt's reason) otherwise. */
  view(workspaceId: string): OrgLinkView {
    const ws = this.deps.workspaces.get(workspaceId)
    const link = this.#links.get(ws.entry.id)
    const attempt = this.#attempts.get(ws.entry.id)
    const linking =
      attempt && !attempt.failed
        ? {
            userCode: attempt.authorization.userCode,
            verificationUri: attempt.authorization.verificationUri,
            verificationUriComplete: attempt.authorization.verificationUriComplete,
            expiresAt: attempt.expiresAt,
          }
        : null
    if (!link) {
      if (linking)
        return {
          controlPlaneUrl: attempt!.controlPlaneUrl,
          via: 'device',
          organization: null,
          member: null,
          state: 'linking',
          lastSyncAt: null,
          lastError: null,
          linking,
          delivered: [],
          conflicts: [],
          refused: [],
        }
      if (attempt?.failed)
        throw workspaceError('org_not_linked', `Not linked: ${attempt.failed.message}`, {
          details: { lastAttempt: attempt.failed },
        })
      throw notLinked()
    }
    return linkView(link.record, {
      state: linking ? 'linking' : link.state,
      lastError: link.lastError,
      linking,
      refused: link.rejected,
    })
  }

  #link(workspaceId: string): OrgLink {
    const link = this.#links.get(this.deps.workspaces.get(workspaceId).entry.id)
    if (!link) throw notLinked()
    return link
  }

  /** Reconciles now and answers the view after it. */
  async sync(workspaceId: string): Promise<OrgLinkView> {
    this.deps.gate.ensureWritable()
    await this.#link(workspaceId).syncNow()
    return this.view(workspaceId)
  }

  /** Resolves one conflict: keep the local content, or take the organization's (a gated write). */
  async resolve(
    workspaceId: string,
    path: string,
    take: 'local' | 'organization',
    principal: Principal,
  ): Promise<OrgLinkView> {
    this.deps.gate.ensureWritable()
    const link = this.#link(workspaceId)
    const conflict = link.record.conflicts.find((c) => c.path === path)
    if (!conflict) throw workspaceError('org_conflict_not_found', 'No open conflict at this path')
    if (take === 'local') await link.keepLocal(path)
    else await link.syncNow([path])
    await link.audit(
      principal,
      'org.resolve',
      `Conflict at ${path}: ${take === 'local' ? 'kept local' : "took the organization's"}`,
    )
    return this.view(workspaceId)
  }

  /** Unlinks (stops following, forgets the token); with `remove`, deletes unchanged managed files. */
  async unlink(
    workspaceId: string,
    remove: boolean,
    principal: Principal,
    signal?: AbortSignal,
  ): Promise<{ removed: number }> {
    this.deps.gate.ensureWritable()
    const id = this.deps.workspaces.get(workspaceId).entry.id
    const attempt = this.#attempts.get(id)
    attempt?.abort.abort()
    this.#attempts.delete(id)
    const link = this.#links.get(id)
    if (!link) {
      if (attempt) return { removed: 0 }
      throw notLinked()
    }
    if (link.record.via === 'worker')
      throw workspaceError('org_link_managed', "A Worker's link is set by the control plane that runs it")
    const removed = await link.unlink(principal, remove, signal)
    this.#links.delete(id)
    await this.store.remove(id)
    await link.audit(principal, 'org.unlink', `Unlinked${remove ? ` and removed ${removed} delivered file(s)` : ''}`)
    return { removed }
  }

  /** Stops every link and attempt. */
  async close(): Promise<void> {
    for (const attempt of this.#attempts.values()) attempt.abort.abort()
    this.#attempts.clear()
    await Promise.all([...this.#links.values()].map((link) => link.stop()))
    this.#links.clear()
  }
}

function emptyRecord(
  workspaceId: string,
  controlPlaneUrl: string,
  via: 'device' | 'worker',
  now: number,
): OrgLinkRecord {
  return {
    workspaceId,
    controlPlaneUrl,
    via,
    sealedAccessToken: null,
    sealedRefreshToken: null,
    accessExpiresAt: null,
    organization: null,
    member: null,
    lastEventId: null,
    lastSyncAt: null,
    appliedDigest: null,
    itemDigests: {},
    revoked: false,
    manifest: {},
    conflicts: [],
    keptLocal: {},
    linkedAt: now,
  }
}

/** 404 `org_not_linked`. */
const notLinked = () => workspaceError('org_not_linked', 'This workspace is not linked to an organization')

/**
 * Where a Worker's model providers go: OpenCode's global config file (`$XDG_CONFIG_HOME` or
 * `~/.config`, `opencode/opencode.json`; see `worker-providers.ts`), or null without a home.
 */
export function providersFileOf(env: Record<string, string | undefined>): string | null {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, '.config') : '')
  return base ? join(base, 'opencode', 'opencode.json') : null
}

/** The Worker's link settings from the provisioner's environment, or null when not a Worker. */
export function workerLinkFromEnv(env: Record<string, string | undefined>): { url: string; token: string } | null {
  const url = env.SERVICE_CONTROL_PLANE_URL ? normalizeControlPlaneUrl(env.SERVICE_CONTROL_PLANE_URL) : null
  const token = workerActivityToken(env)
  if (!url || !token || !env.SERVICE_WORKER_ID) return null
  return { url, token }
}
