/**
 * What the asynchronous families' routes and job handlers close over: domain deps, the job
 * runner, the secret box for sealed credentials, their settings, the Worker provisioners, and
 * the URL runtimes use to reach this control plane (known once the listener is bound).
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { Deps } from '../deps.ts'
import type { SecretBox } from '../secret-box.ts'
import type { Provisioner } from '../workers/provisioner.ts'
import type { AsyncSettings } from './async-settings.ts'
import type { JobRunner } from './job-runner.ts'

/** Shared by job, Worker and connector routes and handlers. */
export interface AsyncContext {
  deps: Deps
  jobs: JobRunner
  box: SecretBox
  settings: AsyncSettings
  provisioners: ReadonlyMap<string, Provisioner>
  /** The control plane's URL for runtimes; null until the listener is bound (and no publicUrl). */
  controlPlaneUrl(): string | null
  log: Logger
}
