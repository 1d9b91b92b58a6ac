/**
 * Registers the connector job kinds (discovery, sync) with the job runner.
 * @module
 */
import type { AsyncContext } from '../jobs/async-context.ts'
import { discoveryJobHandler } from './connector-discovery.ts'
import { syncJobHandler } from './connector-sync-job.ts'

/** Registers discovery and sync. */
export function registerConnectorJobs(ctx: AsyncContext): void {
  ctx.jobs.register(discoveryJobHandler(ctx))
  ctx.jobs.register(syncJobHandler(ctx))
}
