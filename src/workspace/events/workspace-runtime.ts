/**
 * One configured workspace at run time: its entry, read cache, write lock and change tracker.
 * Declared here, beside the tracker it carries, so the writers below the composition (the write
 * gate, the file service) name it without importing the registry that builds it.
 * @module
 */
import type { WorkspaceEntry } from '../config/server-config.ts'
import type { AsyncLock } from '../base/async-lock.ts'
import type { ReadCache } from '../base/read-cache.ts'
import type { ChangeTracker } from './change-tracker.ts'

/** A workspace with its runtime helpers. */
export interface WorkspaceRuntime {
  readonly entry: WorkspaceEntry
  readonly cache: ReadCache
  readonly lock: AsyncLock
  readonly tracker: ChangeTracker
}
