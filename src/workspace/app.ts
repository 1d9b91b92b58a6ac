/**
 * The workspace server (surface A): composition root. Builds the domain services for the
 * configured workspaces and wires their routes into one Fetch handler.
 * @module
 */
import { createHttpApp } from '../core/http-app.ts'
import type { Logger } from '../core/logger.ts'
import { buildOpenApi } from '../core/openapi.ts'
import type { AnyRoute } from '../core/route.ts'
import { hashToken } from '../core/secrets.ts'
import { StreamRegistry } from '../core/sse.ts'
import type { Surface } from '../core/surface.ts'
import { systemRoutes } from '../core/system-routes.ts'
import { metricsRoutes, type SurfaceMetrics } from '../core/metrics-endpoint.ts'
import type { ValidationPolicy } from '../core/validation.ts'
import { VERSION } from '../version.ts'
import {
  rules,
  storeTokens,
  workspaceAuth,
  workspaceSecuritySchemes,
  HOST_TOKEN_HEADER,
  type Principal,
  type WorkspaceRule,
} from './access/auth.ts'
import { controlRoutes } from './routes/index.ts'
import { dataPlane } from './routes/data-plane-routes.ts'
import type { WorkspaceServerConfig } from './config/server-config.ts'
import { startWorkspaceServices, type WorkspaceServices } from './runtime/workspace-services.ts'
import { actorOf } from './events/audit-log.ts'
import { sidecarRoutes } from './sidecar/sidecar-routes.ts'
import { SidecarService } from './sidecar/sidecar-service.ts'
import { sidecarAuth, sidecarSecuritySchemes } from './sidecar/sidecar-auth.ts'
import { sidecarGovernance } from './sidecar/sidecar-governance.ts'
import { workspaceMountRewrite } from './sidecar/workspace-mount.ts'
import { startControlPlaneHeartbeat, type HeartbeatReporter } from './runtime/control-plane-heartbeat.ts'
import { consoleRoutes } from '../console/console-routes.ts'
import { ConsoleSessions } from '../console/console-sessions.ts'
import { consoleLink } from '../console/console-url.ts'
import { withConsoleSessions } from './access/console-credentials.ts'
import { consoleSessionRoutes } from './routes/console-session-routes.ts'
import { WORKSPACE_ERRORS } from './workspace-errors.ts'
import { OrgLinkService } from './org-link/org-link-service.ts'
import type { LinkTiming, OrgLinkState } from './org-link/org-link.ts'
import { orgLinkRoutes } from './routes/org-link-routes.ts'
import { skillLimitsOf } from './extensions/skills.ts'

/** The reference answers bad payloads with 400 `invalid_payload`; existing clients expect that. */
export const workspaceValidation: ValidationPolicy = {
  status: 400,
  bodyCode: 'invalid_payload',
  queryCode: 'invalid_query',
}

/** Headers browsers may send cross-origin to this surface. */
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Last-Event-ID',
  // The SDK sends one on every write (and the same on its retries); a browser must be let send it.
  'Idempotency-Key',
  'X-Request-Id',
  'X-Service-Host-Token',
  'X-Service-Client-Id',
  'X-OpenCode-Directory',
  'Range',
]

/** Options for {@link createWorkspaceApp}. */
export interface WorkspaceAppOptions {
  logger: Logger
  /** Clock for token expiry, events and audit (tests move it forward). */
  now?: () => number
  /** Watch workspace files for outside changes (default true). */
  watch?: boolean
  /** Prometheus metrics (absent: off). */
  metrics?: SurfaceMetrics
  /** Environment read for the Worker link and the sealing key (default `process.env`). */
  env?: Record<string, string | undefined>
  /** Retry and poll timing of organization links (tests shorten it). */
  orgLinkTiming?: Partial<LinkTiming> & { devicePollMs?: number }
}

/** The surface plus its domain services (tests reach into these). */
export type WorkspaceSurface = Surface & {
  readonly services: WorkspaceServices
  /** Every registered route; `declaredRoutes` adds the subroutes they serve (the authorization-matrix test walks those). */
  readonly routes: ReadonlyArray<AnyRoute<WorkspaceRule, Principal>>
  /** The sidecar proxy, reload and managed process. */
  readonly sidecar: SidecarService
  /** File sessions, inbox, artifacts, export and import. */
  readonly data: ReturnType<typeof dataPlane>
  /** Organization links of the workspaces. */
  readonly orgLinks: OrgLinkService
}

/** Creates the workspace surface for a resolved configuration. */
export async function createWorkspaceApp(
  config: WorkspaceServerConfig,
  options: WorkspaceAppOptions,
): Promise<WorkspaceSurface> {
  const startedAt = performance.now()
  const streams = new StreamRegistry()
  const services = await startWorkspaceServices(config, {
    logger: options.logger,
    now: options.now,
    watch: options.watch,
  })
  const consoleSessions = new ConsoleSessions(options.now)
  const auth = workspaceAuth(
    withConsoleSessions(storeTokens(config, services.tokens, hashToken), consoleSessions),
    services.throttle,
  )
  const sidecar = await SidecarService.create({
    config: config.sidecar,
    workspaceIds: config.workspaces.map((w) => w.id),
    readOnly: config.readOnly,
    streams,
    log: options.logger,
    managedCwd: config.workspaces[0]?.path ?? process.cwd(),
    governance: sidecarGovernance({
      approvals: services.approvals,
      audit: services.audit,
      log: options.logger,
      directoryOf: (id) => config.workspaces.find((w) => w.id === id)?.path,
    }),
    onReload: (e) => {
      const summary = e.ok
        ? `Reloaded sidecar (${e.trigger}, ${e.durationMs} ms)`
        : `Sidecar reload failed (${e.trigger}, ${e.code})`
      services.audit
        .record({
          workspaceId: e.workspaceId,
          actor: e.principal ? actorOf(e.principal) : { type: 'host', scope: null },
          action: 'engine.reload',
          target: 'sidecar',
          summary,
        })
        .catch((error) => options.logger.warn('audit of sidecar reload failed', { error }))
    },
  })
  sidecar.followWrites(services.events)
  const proxiedAuth = sidecarAuth(auth, { tickets: sidecar.tickets, mountOf: sidecar.mountOf })
  void sidecar.start()
  const data = dataPlane(services, streams, options.logger)
  const env = options.env ?? process.env
  let orgLinks: OrgLinkService
  try {
    orgLinks = await OrgLinkService.start({
      dataDir: config.dataDir,
      workspaces: services.workspaces,
      gate: services.gate,
      events: services.events,
      audit: services.audit,
      logger: options.logger,
      skillLimits: skillLimitsOf(config.file),
      now: services.now,
      env,
      timing: options.orgLinkTiming,
      // Delivered content comes from outside the agent: OpenCode re-reads it now, not at its next start.
      onApplied: (id) => {
        if (sidecar.anyConfigured) sidecar.reload(id, 'extension-change').catch(() => {})
      },
    })
  } catch (error) {
    data.close()
    await sidecar.close()
    await services.close()
    throw error
  }
  // Run as a hosted Worker: report heartbeats once listening, so `healthy` means reachable.
  let heartbeat: HeartbeatReporter | null = null
  let doc: Record<string, unknown> | undefined
  const routes: AnyRoute<WorkspaceRule, Principal>[] = [
    ...systemRoutes<WorkspaceRule>({
      mode: 'workspace',
      version: VERSION,
      publicRule: rules.none,
      startedAt,
      openapi: () => (doc ??= openapi()),
    }),
    ...metricsRoutes<WorkspaceRule>(rules.none, options.metrics),
    ...controlRoutes(services, streams, startedAt, sidecar),
    ...sidecarRoutes(sidecar),
    ...data.routes,
    ...orgLinkRoutes(orgLinks),
    ...consoleSessionRoutes(consoleSessions),
    ...consoleRoutes<WorkspaceRule>(rules.none),
  ]
  const openapi = () =>
    buildOpenApi(
      {
        title: 'service-server workspace API',
        version: VERSION,
        description: 'Private, filesystem-backed API in front of configured workspaces in OpenCode layout.',
        securitySchemes: { ...workspaceSecuritySchemes, ...sidecarSecuritySchemes },
        errorCodes: WORKSPACE_ERRORS,
      },
      routes,
      proxiedAuth,
      workspaceValidation,
    )
  const http = createHttpApp({
    routes,
    auth: proxiedAuth,
    validation: workspaceValidation,
    cors: { origins: config.corsOrigins, allowHeaders: ALLOWED_HEADERS },
    logger: options.logger,
    requestLog: config.logRequests,
    observe: options.metrics?.requests,
    rewrite: { prefix: '/w/', map: workspaceMountRewrite(config.workspaces.map((w) => w.id)) },
  })
  if (options.metrics) {
    const { registry } = options.metrics
    registry.gauge(
      'service_approvals_pending',
      'Writes waiting for the host to allow or deny them.',
      () => services.approvals.list().length,
    )
    registry.gauge(
      'service_sse_streams_open',
      'Server-sent event streams open (events, approvals, proxied sidecar streams).',
      () => streams.size,
    )
    const linkStates: OrgLinkState[] = ['linking', 'syncing', 'in_sync', 'conflict', 'unreachable', 'revoked']
    registry.gauge(
      'service_org_links',
      "Workspaces linked to an organization (delivered workspaces), by the link's state; unlinked ones are not counted.",
      () => {
        const counts = new Map(linkStates.map((state) => [state, 0]))
        for (const ws of config.workspaces) {
          try {
            const { state } = orgLinks.view(ws.id)
            counts.set(state, (counts.get(state) ?? 0) + 1)
          } catch {
            // not linked
          }
        }
        return [...counts].map(([state, value]) => ({ labels: { state }, value }))
      },
      ['state'],
    )
  }
  let closed = false
  return {
    mode: 'workspace',
    services,
    routes,
    sidecar,
    data,
    orgLinks,
    fetch: http.fetch,
    direct: http.direct,
    router: http.router,
    openapi: () => (doc ??= openapi()),
    streams,
    onListening(address) {
      // A Worker reports healthy only once its delivered set is on disk.
      void orgLinks.workerReady.then(() => {
        if (!closed) heartbeat ??= startControlPlaneHeartbeat(env, { logger: options.logger, version: VERSION })
      })
      const lines: string[] = []
      for (const ws of config.workspaces) lines.push(`workspace ${ws.id} ${ws.path}`)
      if (config.generated.token)
        lines.push(`client token (shown once, stored in ${config.credentialsPath}): ${config.generated.token}`)
      if (config.generated.hostToken)
        lines.push(`host token (shown once, send as ${HOST_TOKEN_HEADER}): ${config.generated.hostToken}`)
      lines.push(`console (one-time link, valid 1 h): ${consoleLink(address, consoleSessions.issueCode())}`)
      return lines
    },
    beginStop: () => services.approvals.stop(),
    async close() {
      if (closed) return
      closed = true
      streams.closeAll()
      data.close()
      heartbeat?.stop()
      await orgLinks.close()
      await sidecar.close()
      await services.close()
    },
  }
}
