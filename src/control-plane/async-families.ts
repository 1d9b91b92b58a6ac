/**
 * Composition of the asynchronous families (jobs, Workers, connectors) for the control plane's
 * composition root: builds the job runner, the secret box, the provisioners and the job
 * handlers, and hands back their routes plus the lifecycle hooks the surface calls.
 * @module
 */
import type { AnyRoute } from '../core/route.ts'
import type { Logger } from '../core/logger.ts'
import type { ControlPlanePrincipal } from './auth.ts'
import type { ControlPlaneConfig } from './config.ts'
import type { Deps } from './deps.ts'
import type { ControlPlaneRule } from './policy.ts'
import { connectorRoutes } from './routes/connector-routes.ts'
import { connectorSyncRoutes } from './routes/connector-sync-routes.ts'
import { jobRoutes } from './routes/job-routes.ts'
import type { RouteContext } from './routes/route.ts'
import { workerRoutes } from './routes/worker-routes.ts'
import { registerConnectorJobs } from './connectors/connector-jobs.ts'
import { ControlPlaneInstance } from './workers/control-plane-instance.ts'
import { ProcessProvisioner } from './workers/process-provisioner.ts'
import { ContainerProvisioner } from './workers/container/container-provisioner.ts'
import { recordRuntimeState } from './workers/engine-state.ts'
import type { Provisioner } from './workers/provisioner.ts'
import { recoverRuntimes, RuntimeOwnership, sweepLostInstances, watchRuntimes } from './workers/runtime-ownership.ts'
import {
  provisionJobHandler,
  recordRuntimeExit,
  resumeRuntimes,
  stopRuntimes,
  sweepWorkers,
} from './workers/worker-lifecycle.ts'
import type { AsyncContext } from './jobs/async-context.ts'
import { resolveAsyncSettings, type AsyncFileKeys } from './jobs/async-settings.ts'
import { JobRunner } from './jobs/job-runner.ts'

/** The running asynchronous families. */
export interface AsyncFamilies {
  ctx: AsyncContext
  routes: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>[]
  /**
   * Registers this instance, stops runtimes a crashed control plane left on this host and queues
   * their restart and that of runtimes stopped by the last shutdown, then starts the job loop.
   */
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
  const instance = new ControlPlaneInstance({
    db: deps.db,
    now: deps.now,
    settings: {
      heartbeatMs: settings.workers.instanceHeartbeatMs,
      staleAfterMs: settings.workers.instanceStaleAfterMs,
    },
    logger,
  })
  if (settings.workers.container) {
    const containers = new ContainerProvisioner({
      settings: settings.workers.container,
      instanceId: instance.id,
      logger,
    })
    provisioners.set(containers.name, containers)
  }
  const ctx: AsyncContext = {
    deps,
    jobs,
    box,
    settings,
    provisioners,
    instance,
    runtimes: new RuntimeOwnership(),
    log: logger,
    controlPlaneUrl: () => settings.workers.publicUrl ?? listeningUrl,
  }
  for (const provisioner of provisioners.values()) {
    provisioner.onRuntimeState?.((workerIds, problem) => {
      recordRuntimeState(ctx, workerIds, problem).catch((error) =>
        logger.warn('recording a runtime state failed', { error: (error as Error).message }),
      )
    })
    provisioner.onExit((workerId, reason) => {
      recordRuntimeExit(ctx, workerId, reason).catch((error) =>
        logger.warn('recording a runtime exit failed', { workerId, error: (error as Error).message }),
      )
    })
  }
  jobs.register(provisionJobHandler(ctx))
  registerConnectorJobs(ctx)
  jobs.every('worker-sweep', settings.workers.sweepIntervalMs, async () => {
    await sweepWorkers(ctx)
    await sweepLostInstances(ctx)
  })
  // The watch over this instance's runtimes has its own timer: a revoked token must stop working
  // within a second even while the job loop is busy with a long claim or sweep.
  let watchTimer: ReturnType<typeof setInterval> | undefined
  let watching: Promise<void> | null = null
  const watch = () => {
    if (watching) return
    watching = watchRuntimes(ctx)
      .catch((error) => logger.warn('checking Worker runtimes failed', { error: (error as Error).message }))
      .finally(() => {
        watching = null
      })
  }
  return {
    ctx,
    routes: [
      ...jobRoutes(ctx),
      ...workerRoutes(ctx),
      ...connectorRoutes(ctx, routeContext),
      ...connectorSyncRoutes(ctx),
    ],
    async start() {
      await instance.register()
      const recovered = await recoverRuntimes(ctx)
      if (recovered > 0)
        logger.info('restarting Worker runtimes left running by a control plane that crashed', { count: recovered })
      watchTimer = setInterval(watch, settings.workers.runtimeCheckIntervalMs)
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
      clearInterval(watchTimer)
      await watching
      // The job loop first: it hands unfinished attempts back to the queue (not counted as failed).
      await jobs.stop()
      ctx.runtimes.abortAll()
      await stopRuntimes(ctx)
      await instance
        .stop()
        .catch((error) => logger.warn('recording this instance as stopped failed', { error: (error as Error).message }))
    },
  }
}
