/**
 * Composition of the asynchronous families (jobs, Workers, connectors) for the control plane's
 * composition root: builds the job runner, the secret box, the provisioners and the job
 * handlers, and hands back their routes plus the lifecycle hooks the surface calls.
 * @module
 */
import type { AnyRoute } from '../../core/route.ts'
import type { Logger } from '../../core/logger.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import type { ControlPlaneConfig } from '../config.ts'
import type { Deps } from '../deps.ts'
import type { ControlPlaneRule } from '../policy.ts'
import { connectorRoutes } from '../routes/connector-routes.ts'
import { connectorSyncRoutes } from '../routes/connector-sync-routes.ts'
import { jobRoutes } from '../routes/job-routes.ts'
import type { RouteContext } from '../routes/route.ts'
import { workerRoutes } from '../routes/worker-routes.ts'
import { registerConnectorJobs } from '../connectors/connector-jobs.ts'
import { ProcessProvisioner } from '../workers/process-provisioner.ts'
import type { Provisioner } from '../workers/provisioner.ts'
import {
  provisionJobHandler,
  recordRuntimeExit,
  resumeRuntimes,
  stopRuntimes,
  sweepWorkers,
} from '../workers/worker-lifecycle.ts'
import type { AsyncContext } from './async-context.ts'
import { resolveAsyncSettings, type AsyncFileKeys } from './async-settings.ts'
import { JobRunner } from './job-runner.ts'

/** The running asynchronous families. */
export interface AsyncFamilies {
  ctx: AsyncContext
  routes: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>[]
  /** Queues the restart of runtimes stopped by the last shutdown, then starts the job loop. */
  start(): Promise<void>
  /** Learns the listening address (the URL runtimes report heartbeats to); returns a startup line. */
  listening(address: { host: string; port: number }): string
  /** Stops the job loop (handing unfinished attempts back) and the runtimes started here. */
  close(): Promise<void>
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1'
  if (host === '::') return '[::1]'
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

/** Builds the families over the domain deps and configuration. */
export function createAsyncFamilies(
  deps: Deps,
  config: ControlPlaneConfig,
  logger: Logger,
  routeContext: RouteContext,
): AsyncFamilies {
  const settings = resolveAsyncSettings(config.file as AsyncFileKeys, config.env, config.dataDir)
  const box = deps.secrets
  const jobs = new JobRunner({ db: deps.db, now: deps.now, settings: settings.jobs, logger })
  const processProvisioner = new ProcessProvisioner({ dataDir: settings.workers.dataDir, logger })
  const provisioners = new Map<string, Provisioner>([[processProvisioner.name, processProvisioner]])
  let listeningUrl: string | null = null
  const ctx: AsyncContext = {
    deps,
    jobs,
    box,
    settings,
    provisioners,
    log: logger,
    controlPlaneUrl: () => settings.workers.publicUrl ?? listeningUrl,
  }
  for (const provisioner of provisioners.values()) {
    provisioner.onExit((workerId, reason) => {
      recordRuntimeExit(ctx, workerId, reason).catch((error) =>
        logger.warn('recording a runtime exit failed', { workerId, error: (error as Error).message }),
      )
    })
  }
  jobs.register(provisionJobHandler(ctx))
  registerConnectorJobs(ctx)
  jobs.every('worker-sweep', settings.workers.sweepIntervalMs, () => sweepWorkers(ctx))
  return {
    ctx,
    routes: [
      ...jobRoutes(ctx),
      ...workerRoutes(ctx),
      ...connectorRoutes(ctx, routeContext),
      ...connectorSyncRoutes(ctx),
    ],
    async start() {
      const resumed = await resumeRuntimes(ctx)
      if (resumed > 0) logger.info('restarting Worker runtimes stopped by the last shutdown', { count: resumed })
      jobs.start()
    },
    listening(address) {
      listeningUrl = `http://${urlHost(address.host)}:${address.port}`
      jobs.wake()
      return `Worker runtimes report heartbeats to ${ctx.controlPlaneUrl()}`
    },
    async close() {
      await jobs.stop()
      await stopRuntimes(ctx)
    },
  }
}
