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
import type { ValidationPolicy } from '../core/validation.ts'
import { openDatabase, type Database } from '../storage/database.ts'
import { VERSION } from '../version.ts'
import type { ControlPlaneConfig } from './config.ts'
import type { ControlPlaneDb } from './schema.ts'

/** Control-plane validation failures are 422 with field paths, per its contract. */
export const controlPlaneValidation: ValidationPolicy = { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' }

/** A route's auth rule on the control plane. */
export type ControlPlaneRule = { kind: 'public' }
/** The authenticated caller. */
export type ControlPlanePrincipal = { kind: 'anonymous' }

const auth: SurfaceAuth<ControlPlaneRule, ControlPlanePrincipal> = {
  authenticate: () => ({ kind: 'anonymous' }),
  security: () => [],
  statuses: () => [],
}

const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Api-Key', 'X-Request-Id', 'X-Service-Org-Id']

/** Options for {@link createControlPlaneApp}. */
export interface ControlPlaneAppOptions {
  logger: Logger
}

/** Creates the control-plane surface: opens and migrates the database first. */
export async function createControlPlaneApp(config: ControlPlaneConfig, options: ControlPlaneAppOptions): Promise<Surface & { database: Database<ControlPlaneDb> }> {
  const startedAt = performance.now()
  const database = await openDatabase<ControlPlaneDb>({ path: config.databasePath, migrations: controlPlaneMigrations })
  const streams = new StreamRegistry()
  let doc: Record<string, unknown> | undefined
  const document = () => (doc ??= buildOpenApi(
    {
      title: 'service-server control plane API',
      version: VERSION,
      description: 'Organization control plane: identity, members, configuration, connectors and Workers. This document is the authoritative contract.',
      securitySchemes: {},
    },
    routes,
    auth,
    controlPlaneValidation,
  ))
  const routes: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>[] = [
    ...systemRoutes<ControlPlaneRule>({ mode: 'control-plane', version: VERSION, publicRule: { kind: 'public' }, startedAt, openapi: document }),
  ]
  const http = createHttpApp({
    routes,
    auth,
    validation: controlPlaneValidation,
    cors: { origins: config.corsOrigins, allowHeaders: ALLOWED_HEADERS },
    logger: options.logger,
    requestLog: config.logRequests,
  })
  let closed = false
  return {
    mode: 'control-plane',
    fetch: http.fetch,
    router: http.router,
    openapi: document,
    streams,
    database,
    onListening: () => [`database ${config.databasePath}`],
    async close() {
      if (closed) return
      closed = true
      streams.closeAll()
      await database.close()
    },
  }
}
