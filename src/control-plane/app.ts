/**
 * The control plane (surface B): composition root. Opens the database, builds domain services,
 * and wires their routes into one Fetch handler.
 * @module
 */
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import { createHttpApp, type SurfaceAuth } from '../core/http-app.ts'
import type { Logger } from '../core/logger.ts'
import { buildOpenApi } from '../core/openapi.ts'
import type { AnyRoute } from '../core/route.ts'
import { StreamRegistry } from '../core/sse.ts'
import type { Surface } from '../core/surface.ts'
import { systemRoutes } from '../core/system-routes.ts'
import { metricsRoutes, type SurfaceMetrics } from '../core/metrics-endpoint.ts'
import type { ValidationPolicy } from '../core/validation.ts'
import { openDatabase, type Database } from '../storage/database.ts'
import { databaseProbe } from '../storage/health-probe.ts'
import { readinessProbe } from '../storage/readiness-probe.ts'
import { VERSION } from '../version.ts'
import { controlPlaneAuth, controlPlaneSecuritySchemes, type ControlPlanePrincipal } from './auth.ts'
import type { ControlPlaneConfig } from './config.ts'
import type { Deps, ScryptParams } from './deps.ts'
import { DEFAULT_SCRYPT } from './identity/passwords.ts'
import { SignInThrottle } from './identity/sign-in-throttle.ts'
import { annotatePolicy } from './openapi-policy.ts'
import { rules, type ControlPlaneRule } from './policy.ts'
import { createAsyncFamilies } from './async-families.ts'
import { apiKeyRoutes } from './routes/api-key-routes.ts'
import { authRoutes } from './routes/auth-routes.ts'
import { catalogRoutes } from './routes/catalog-routes.ts'
import { loadProviderCatalog } from './providers/provider-catalog.ts'
import { invitationRoutes } from './routes/invitation-routes.ts'
import { memberRoutes } from './routes/member-routes.ts'
import { meRoutes } from './routes/me-routes.ts'
import { orgRoutes } from './routes/org-routes.ts'
import type { RouteContext } from './routes/route.ts'
import { teamRoutes } from './routes/team-routes.ts'
import { eventRoutes } from './routes/event-routes.ts'
import { CountedChangeSubscriptions, registerControlPlaneMetrics } from './ops/control-plane-metrics.ts'
import { deliveryRoutes } from './routes/delivery-routes.ts'
import { opencodeRoutes } from './routes/opencode-routes.ts'
import { findActiveOAuthToken } from './oauth/oauth-tokens.ts'
import { oauthRoutes } from './oauth/oauth-routes.ts'
import { ssoRoutes } from './routes/sso-routes.ts'
import type { ControlPlaneDb } from './schema.ts'
import { loadSecretBox } from './secret-box.ts'
import { consoleRoutes } from '../console/console-routes.ts'
import { CONTROL_PLANE_ERRORS } from './control-plane-errors.ts'
import { idempotentRoutes } from './idempotency/idempotent-routes.ts'
import { startKeySweeper } from './idempotency/key-sweeper.ts'
import { auditedAuth, auditedFetch } from './audit/audited-surface.ts'
import { startAuditSweeper } from './audit/audit-retention.ts'
import { auditRoutes } from './routes/audit-routes.ts'
import { readZipBody } from './routes/zip-body.ts'
import { importLimits } from './catalog/skill-import.ts'
import { mcpRoutes } from './mcp/mcp-routes.ts'
import { mcpLimits } from './mcp/mcp-settings.ts'
import { CredentialRateLimiter } from './rate-limit/credential-rate-limiter.ts'
import { followInstances } from './rate-limit/instance-count.ts'
import { registerRateLimitMetrics } from './rate-limit/rate-limit-metrics.ts'
import { rateLimitSettings } from './rate-limit/rate-limit-settings.ts'
import { rateLimitedAuth } from './rate-limit/rate-limited-auth.ts'
import { scimRoutes } from './routes/scim-routes.ts'
import { scimTokenRoutes } from './routes/scim-token-routes.ts'
import { readScimBytes } from './scim/scim-protocol.ts'

export type { ControlPlaneRule } from './policy.ts'
export type { ControlPlanePrincipal } from './auth.ts'

/**
 * Control-plane validation failures are 422 with field paths, per its contract. NUL characters are
 * refused in every body string and query parameter on both engines (PostgreSQL cannot store them).
 */
export const controlPlaneValidation: ValidationPolicy = {
  status: 422,
  bodyCode: 'validation_failed',
  queryCode: 'validation_failed',
  refuseNul: true,
}

const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-Api-Key',
  'X-Request-Id',
  'X-Service-Org-Id',
  // The console's API client names itself for the audit log's origin.
  'X-Service-Client',
  // MCP clients in a browser (the MCP Inspector) send these to /mcp.
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'Last-Event-ID',
]
/** Response headers a browser client may read besides the request id. */
const EXPOSED_HEADERS = ['Idempotency-Replayed', 'Retry-After', 'Mcp-Session-Id', 'RateLimit', 'RateLimit-Policy']

/** How long an invitation stays pending (issue 6: 7 days). */
const INVITATION_TTL_MS = 7 * 24 * 3600_000

/** Options for {@link createControlPlaneApp}. */
export interface ControlPlaneAppOptions {
  logger: Logger
  /** Clock in epoch ms; tests move it to exercise expiry. */
  now?: () => number
  /** Password KDF cost; tests lower it to keep suites fast. Production uses the default. */
  scrypt?: ScryptParams
  /** Prometheus metrics (absent: off). */
  metrics?: SurfaceMetrics
}

/** The route table and auth policy, exposed so contract tests validate responses against them. */
export interface ControlPlaneContract {
  routes: ReadonlyArray<AnyRoute<ControlPlaneRule, ControlPlanePrincipal>>
  auth: SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal>
  validation: ValidationPolicy
}

/** A running control plane. */
export type ControlPlaneApp = Surface & {
  database: Database<ControlPlaneDb>
  deps: Deps
  contract: ControlPlaneContract
  /** The per-credential limiter (null when off); `refreshInstances` recounts the live instances now. */
  rateLimit: { limiter: CredentialRateLimiter; refreshInstances(): Promise<void> } | null
}

/** Creates the control-plane surface: opens and migrates the database first. */
export async function createControlPlaneApp(
  config: ControlPlaneConfig,
  options: ControlPlaneAppOptions,
): Promise<ControlPlaneApp> {
  const startedAt = performance.now()
  const secretKey = await loadSecretBox({ envKey: config.encryptionKey, keyFile: config.encryptionKeyFile })
  const database = await openDatabase<ControlPlaneDb>({
    path: config.databasePath,
    url: config.databaseUrl ?? undefined,
    postgres: {
      poolSize: config.databasePool.size,
      statementTimeoutMs: config.databasePool.statementTimeoutMs,
      connectTimeoutMs: config.databasePool.connectTimeoutMs,
      // One line per lost connection, in the chosen format; the next query opens a new one.
      onConnectionLost: (lost) => options.logger.warn('database connection lost', { ...lost }),
    },
    migrations: controlPlaneMigrations,
  })
  const now = options.now ?? Date.now
  const deps: Deps = {
    db: database.db,
    now,
    settings: {
      openSignUp: config.openSignUp,
      sessionTtlMs: config.sessionTtlHours * 3600_000,
      invitationTtlMs: INVITATION_TTL_MS,
      scrypt: options.scrypt ?? DEFAULT_SCRYPT,
      skills: config.file.skills,
      oauthTokenTtlDays: config.file.oauth?.tokenTtlDays,
      oauthDeviceIntervalSeconds: config.file.oauth?.deviceIntervalSeconds,
    },
    secrets: secretKey.box,
    notifier: database.notifier,
  }
  const changeSubscriptions = new CountedChangeSubscriptions(database.notifier)
  const throttle = new SignInThrottle(
    {
      maxFailuresPerAccount: config.signInThrottle.maxFailuresPerAccount,
      maxFailuresPerAddress: config.signInThrottle.maxFailuresPerAddress,
      windowMs: config.signInThrottle.windowSeconds * 1000,
    },
    now,
    database.db,
  )
  const publicUrl = config.env.SERVICE_CONTROL_PLANE_PUBLIC_URL || config.file.workers?.publicUrl || null
  const ctx: RouteContext = {
    deps,
    throttle,
    trustProxy: config.trustProxy,
    publicUrl: publicUrl ? publicUrl.replace(/\/+$/, '') : null,
  }
  const asyncFamilies = createAsyncFamilies(deps, config, options.logger, ctx)
  const limits = rateLimitSettings(config.file.rateLimit, config.env)
  const limiter = limits.enabled
    ? new CredentialRateLimiter({
        ratePerSecond: limits.ratePerSecond,
        burst: limits.burst,
        maxTracked: limits.maxTrackedCredentials,
      })
    : null
  const limited = limiter ? rateLimitedAuth(controlPlaneAuth(deps), limiter, limits) : null
  // Every write request is audited once, whichever module declared its route (audit/audited-surface.ts).
  const auth = auditedAuth(limited?.auth ?? controlPlaneAuth(deps))
  const streams = new StreamRegistry()
  if (options.metrics) registerControlPlaneMetrics(options.metrics, { database, changeSubscriptions, streams, now })
  if (options.metrics && limiter && limited) registerRateLimitMetrics(options.metrics, limiter, limited.refused)
  const mcp = mcpRoutes(ctx, mcpLimits(config.file.mcp), changeSubscriptions)
  let doc: Record<string, unknown> | undefined
  const document = () =>
    (doc ??= annotatePolicy(
      buildOpenApi(
        {
          title: 'service-server control plane API',
          version: VERSION,
          description:
            'Organization control plane: identity, members, configuration, connectors and Workers. This document is the authoritative contract. Errors are `{code, message, details?}`; validation failures are 422 `validation_failed` with `details.issues[{path, message}]`; lists are `{items, nextCursor}` (pass `nextCursor` back as `cursor`).',
          securitySchemes: controlPlaneSecuritySchemes,
          errorCodes: CONTROL_PLANE_ERRORS,
        },
        routes,
        auth,
        controlPlaneValidation,
      ),
      routes,
    ))
  const declared: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>[] = [
    ...systemRoutes<ControlPlaneRule>({
      mode: 'control-plane',
      version: VERSION,
      publicRule: rules.public,
      startedAt,
      openapi: document,
      // Load balancers poll /health; the probe runs at most one `select 1` a second.
      database: databaseProbe(database.db),
      ready: readinessProbe(database.db, Object.keys(controlPlaneMigrations)),
    }),
    ...metricsRoutes<ControlPlaneRule>(rules.public, options.metrics),
    ...authRoutes(ctx),
    ...meRoutes(ctx),
    ...orgRoutes(ctx),
    ...auditRoutes(ctx),
    ...memberRoutes(ctx),
    ...invitationRoutes(ctx),
    ...teamRoutes(ctx),
    ...apiKeyRoutes(ctx),
    ...scimTokenRoutes(ctx),
    ...scimRoutes(ctx),
    ...catalogRoutes(ctx, loadProviderCatalog(config.llmProviderCatalogFile)),
    ...asyncFamilies.routes,
    ...deliveryRoutes(ctx),
    ...opencodeRoutes(ctx, {
      publicUrl: asyncFamilies.ctx.settings.workers.publicUrl,
      oauthActive: async (d, grantId, owner) => {
        const grant = await findActiveOAuthToken(d, grantId)
        return grant !== null && grant.userId === owner.userId && grant.orgId === owner.orgId
      },
    }),
    ...eventRoutes(ctx, changeSubscriptions, streams),
    ...mcp.routes,
    ...oauthRoutes(ctx),
    ...ssoRoutes(ctx),
    ...consoleRoutes<ControlPlaneRule>(rules.public),
  ]
  // Every write honours Idempotency-Key (idempotency/idempotent-routes.ts); the only raw body is a
  // zip archive (and SCIM's bodies, read in SCIM's format), read with its own limit to be fingerprinted.
  const routes = idempotentRoutes(declared, {
    deps,
    ttlMs: config.idempotencyKeyTtlHours * 3600_000,
    logger: options.logger,
    readRawBody: (route, request) =>
      route.auth.kind === 'scim' ? readScimBytes(request) : readZipBody(request, importLimits(deps).maxZipBytes),
  })
  const stopSweeper = startKeySweeper(deps, options.logger)
  const stopAuditSweeper = startAuditSweeper(deps, options.logger, config.auditRetentionDays)
  const http = createHttpApp({
    routes,
    auth,
    validation: controlPlaneValidation,
    cors: { origins: config.corsOrigins, allowHeaders: ALLOWED_HEADERS, exposeHeaders: EXPOSED_HEADERS },
    logger: options.logger,
    requestLog: config.logRequests,
    observe: options.metrics?.requests,
  })
  let closed = false
  await asyncFamilies.start()
  const instances = limiter
    ? followInstances(database.db, asyncFamilies.ctx.instance, limiter, limits.instanceRefreshMs, options.logger)
    : null
  await instances?.refresh()
  return {
    mode: 'control-plane',
    fetch: auditedFetch(http.fetch, { deps, table: http.router, logger: options.logger }),
    direct: http.direct,
    router: http.router,
    openapi: document,
    streams,
    database,
    deps,
    contract: { routes, auth, validation: controlPlaneValidation },
    rateLimit: limiter && instances ? { limiter, refreshInstances: instances.refresh } : null,
    onListening: (address) => [
      asyncFamilies.listening(address),
      database.engine === 'postgres' ? `database PostgreSQL ${database.path}` : `database ${database.path}`,
      secretKey.source === 'env'
        ? 'secrets encrypted with SERVICE_ENCRYPTION_KEY'
        : `secrets encrypted with the key in ${config.encryptionKeyFile}${secretKey.source === 'generated' ? ' (generated now: back it up with the database)' : ''}`,
    ],
    async close() {
      if (closed) return
      closed = true
      stopSweeper()
      stopAuditSweeper()
      instances?.stop()
      streams.closeAll()
      mcp.close()
      changeSubscriptions.close()
      await asyncFamilies.close()
      await database.close()
    },
  }
}
