/**
 * What the asynchronous families' routes and job handlers close over: domain deps, the job
 * runner, the secret box for sealed credentials, their settings, the Worker provisioners, this
 * instance's identity and runtime ownership, and the URL runtimes use to reach this control plane (known once the listener is bound).
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { Deps } from '../deps.ts'
import type { SecretBox } from '../secret-box.ts'
import type { ControlPlaneInstance } from '../workers/control-plane-instance.ts'
import type { Provisioner } from '../workers/provisioner.ts'
import type { RuntimeOwnership } from '../workers/runtime-ownership.ts'
import type { AsyncSettings } from './async-settings.ts'
import type { JobRunner } from './job-runner.ts'

/** Shared by job, Worker and connector routes and handlers. */
export interface AsyncContext {
  deps: Deps
  jobs: JobRunner
  box: SecretBox
  settings: AsyncSettings
  provisioners: ReadonlyMap<string, Provisioner>
  /** This control plane among the instances sharing the database (owner of the runtimes it starts). */
  instance: ControlPlaneInstance
  /** Per-Worker locks and starts in progress in this process. */
  runtimes: RuntimeOwnership
  /** The control plane's URL for runtimes; null until the listener is bound (and no publicUrl). */
  controlPlaneUrl(): string | null
  log: Logger
}
