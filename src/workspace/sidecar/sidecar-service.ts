/**
 * The sidecar feature as one object the composition root builds: resolves each workspace's
 * effective target (configured, or the managed process's current address and password), forwards
 * proxy requests, reloads, reports status, and owns the managed process's lifecycle.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import type { Logger } from '../../core/logger.ts'
import type { StreamRegistry } from '../../core/sse.ts'
import type { Principal } from '../access/auth.ts'
import type { ManagedSidecar, ManagedState } from './managed-sidecar.ts'
import { SessionGuard } from './session-guard.ts'
import type { SidecarConfig, SidecarTarget } from '../config/sidecar-config.ts'
import { ProbeCache, probeSidecar, type SidecarStatus } from './sidecar-probe.ts'
import type { SidecarRouteEntry } from './route-table.ts'
import { SocketRelay } from './socket-relay.ts'
import { SocketTickets } from './socket-tickets.ts'
import { forwardToSidecar, type ProxyGovernance } from './sidecar-proxy.ts'
import { ReloadDebouncer, reloadSidecar, type ReloadResult } from './sidecar-reload.ts'
import { workspaceError } from '../workspace-errors.ts'

/** Options for {@link SidecarService}. */
export interface SidecarServiceOptions {
  config: SidecarConfig
  /** Workspace ids in configuration order; the first is the target of `/sidecar/*`. */
  workspaceIds: readonly string[]
  readOnly: boolean
  streams: StreamRegistry
  log: Logger
  /** Working directory of a managed sidecar (the first workspace's path). */
  managedCwd: string
  /** Called after every reload attempt (audit hook), with the outcome. */
  onReload?: (event: {
    workspaceId: string
    trigger: 'manual' | 'extension-change'
    ok: boolean
    code?: string
    durationMs?: number
    principal?: Principal
  }) => void
  /** Approval gate and audit log for governed rows of the allow-list. */
  governance?: ProxyGovernance
}

const PROBE_TTL_MS = 2000
const PROBE_TIMEOUT_MS = 2000

/** Status of every workspace's sidecar, plus the managed process when there is one. */
export interface SidecarOverview {
  workspaces: Record<string, SidecarStatus>
  managed: ManagedState | null
}

/** The sidecar feature. */
export class SidecarService {
  readonly managed: ManagedSidecar | null
  readonly #guards = new Map<string, SessionGuard>()
  readonly #probes = new ProbeCache(PROBE_TTL_MS)
  readonly #debouncer: ReloadDebouncer
  /** Single-use WebSocket tickets for browsers. */
  readonly tickets = new SocketTickets()
  /** Relays allow-listed WebSocket routes. */
  readonly sockets: SocketRelay

  /**
   * Builds the service. The managed-process code (node:child_process) is loaded only when a managed
   * sidecar is configured: the rest of the time it would cost the process resident memory for nothing.
   */
  static async create(options: SidecarServiceOptions): Promise<SidecarService> {
    const managed = options.config.managed ? (await import('./managed-sidecar.ts')).ManagedSidecar : null
    return new SidecarService(options, managed)
  }

  private constructor(
    private readonly options: SidecarServiceOptions,
    Managed: typeof ManagedSidecar | null,
  ) {
    this.managed =
      options.config.managed && Managed
        ? new Managed(options.config.managed, {
            log: options.log.child({ component: 'managed-sidecar' }),
            cwd: options.managedCwd,
          })
        : null
    this.managed?.onChange(() => this.#probes.invalidate())
    this.sockets = new SocketRelay({
      tuning: options.config.tuning,
      streams: options.streams,
      tickets: this.tickets,
      log: options.log,
    })
    this.#debouncer = new ReloadDebouncer(options.config.tuning.reloadDebounceMs, (workspaceId) => {
      this.reload(workspaceId, 'extension-change').catch((error) => {
        options.log.warn('automatic sidecar reload failed', {
          workspaceId,
          code: error instanceof ApiError ? error.code : 'internal_error',
        })
      })
    })
  }

  /** True when any workspace has a sidecar (for `/capabilities`). */
  get anyConfigured(): boolean {
    return this.options.config.targets.size > 0
  }

  /** The id `/sidecar/*` addresses: the first configured workspace. */
  get defaultWorkspaceId(): string | undefined {
    return this.options.workspaceIds[0]
  }

  /** The effective target of a workspace, or throws 404/400. */
  target(workspaceId: string): SidecarTarget {
    if (!this.options.workspaceIds.includes(workspaceId))
      throw workspaceError('workspace_not_found', 'Workspace not found')
    const configured = this.options.config.targets.get(workspaceId)
    if (!configured)
      throw workspaceError('sidecar_unconfigured', 'This workspace has no sidecar configured', {
        details: { workspaceId },
      })
    if (!configured.managed || !this.managed) return configured
    return {
      ...configured,
      baseUrl: this.managed.baseUrl,
      username: this.managed.username,
      password: this.managed.password,
    }
  }

  #guard = (baseUrl: string): SessionGuard => {
    let guard = this.#guards.get(baseUrl)
    if (!guard) this.#guards.set(baseUrl, (guard = new SessionGuard()))
    return guard
  }

  /** Forwards a proxied request for `workspaceId`. */
  proxy(input: {
    workspaceId: string
    request: Request
    rest: string
    search: string
    principal: Principal
    requestId: string
    log: Logger
    entry: SidecarRouteEntry | null
  }): Promise<Response> {
    const target = this.target(input.workspaceId)
    return forwardToSidecar(
      { ...input, target },
      {
        tuning: this.options.config.tuning,
        readOnly: this.options.readOnly,
        streams: this.options.streams,
        log: input.log,
        guard: this.#guard,
        governance: this.options.governance,
        socket: this.sockets.handle,
      },
    )
  }

  /**
   * The workspace and proxied path a sidecar mount URL addresses (`/w/:id/sidecar/x` or
   * `/sidecar/x`), or null for any other path. Tickets are bound to these.
   */
  mountOf = (pathname: string): { workspaceId: string; path: string } | null => {
    const nested = /^\/w\/([^/]+)\/sidecar(\/.*)$/.exec(pathname)
    if (nested) {
      try {
        return { workspaceId: decodeURIComponent(nested[1]!), path: nested[2]! }
      } catch {
        return null
      }
    }
    const root = /^\/sidecar(\/.*)$/.exec(pathname)
    return root ? { workspaceId: this.defaultWorkspaceId ?? '', path: root[1]! } : null
  }

  /** Reloads the sidecar instance of a workspace (manual or after extension writes). */
  async reload(
    workspaceId: string,
    trigger: 'manual' | 'extension-change' = 'manual',
    principal?: Principal,
  ): Promise<ReloadResult> {
    const target = this.target(workspaceId)
    try {
      const result = await reloadSidecar(workspaceId, target, this.options.config.tuning.reloadTimeoutMs)
      this.#probes.invalidate(workspaceId)
      this.options.onReload?.({ workspaceId, trigger, ok: true, durationMs: result.durationMs, principal })
      return result
    } catch (error) {
      this.options.onReload?.({
        workspaceId,
        trigger,
        ok: false,
        code: error instanceof ApiError ? error.code : 'internal_error',
        principal,
      })
      throw error
    }
  }

  /**
   * Extension routes call this after a successful write. Reloads (debounced) only when configured
   * with `reloadOnExtensionChange`; returns whether a reload was scheduled.
   */
  extensionsChanged(workspaceId: string): boolean {
    if (!this.options.config.tuning.reloadOnExtensionChange) return false
    if (!this.options.config.targets.has(workspaceId)) return false
    this.#debouncer.request(workspaceId)
    return true
  }

  /** Reachability and version of one workspace's sidecar, without credentials. */
  status(workspaceId: string): Promise<SidecarStatus> {
    const configured = this.options.config.targets.get(workspaceId)
    return this.#probes.get(workspaceId, () =>
      probeSidecar(configured ? this.target(workspaceId) : undefined, PROBE_TIMEOUT_MS),
    )
  }

  #unfollow: (() => void) | undefined

  /**
   * Reloads (debounced, when `reloadOnExtensionChange` is on) after every config or extension
   * write made through this server, as reported on the workspace event log. Changes found on disk
   * by the watcher do not reload: those come from editors, often many at once.
   */
  followWrites(events: {
    subscribe(listener: (event: { type: string; source?: string; workspaceId: string }) => void): () => void
  }): void {
    this.#unfollow?.()
    this.#unfollow = events.subscribe((event) => {
      if (event.type === 'reload' && event.source === 'server') this.extensionsChanged(event.workspaceId)
    })
  }

  /** Status of every workspace's sidecar. */
  async overview(): Promise<SidecarOverview> {
    const entries = await Promise.all(this.options.workspaceIds.map(async (id) => [id, await this.status(id)] as const))
    return { workspaces: Object.fromEntries(entries), managed: this.managed?.status ?? null }
  }

  #started: Promise<boolean> | undefined

  /**
   * Starts the managed sidecar, if configured; resolves once it is healthy (true) or its first start
   * failed (false; restarts continue in the background). Idempotent.
   */
  start(): Promise<boolean> {
    return (this.#started ??= this.managed ? this.managed.start() : Promise.resolve(true))
  }

  /** Stops background work and the managed process. */
  async close(): Promise<void> {
    this.#unfollow?.()
    this.#debouncer.cancelAll()
    await this.managed?.stop()
  }
}
