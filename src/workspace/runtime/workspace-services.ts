/**
 * Builds the workspace server's domain services from its configuration: state database, token
 * store, event log, audit log, approvals, workspaces (with watchers) and the write gate. Routes
 * receive this object; nothing here knows about HTTP.
 * @module
 */
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import { ApprovalService } from '../approvals/approvals.ts'
import { AuditLog } from '../events/audit-log.ts'
import { AuthThrottle, DEFAULT_AUTH_THROTTLE } from '../access/auth-throttle.ts'
import { EventStore } from '../events/event-store.ts'
import type { WorkspaceServerConfig } from '../config/server-config.ts'
import { openStateDatabase, type StateDatabase } from '../base/state-db.ts'
import { TokenStore } from '../access/token-store.ts'
import { WorkspaceRegistry } from './workspace-registry.ts'
import { WriteGate } from '../approvals/write-gate.ts'

/** Test and embedding hooks. */
export interface WorkspaceServiceOptions {
  logger: Logger
  /** Clock for token expiry, events and audit (tests move it forward). */
  now?: () => number
  /** Watch workspace files for outside changes (default true). */
  watch?: boolean
}

/** Everything the workspace routes use. */
export interface WorkspaceServices {
  readonly config: WorkspaceServerConfig
  readonly db: StateDatabase
  readonly tokens: TokenStore
  readonly events: EventStore
  readonly audit: AuditLog
  readonly approvals: ApprovalService
  readonly workspaces: WorkspaceRegistry
  readonly gate: WriteGate
  readonly throttle: AuthThrottle
  readonly now: () => number
  close(): Promise<void>
}

/** Opens storage and starts the workspace services. */
export async function startWorkspaceServices(
  config: WorkspaceServerConfig,
  options: WorkspaceServiceOptions,
): Promise<WorkspaceServices> {
  const now = options.now ?? Date.now
  const db = await openStateDatabase(config.dataDir)
  try {
    const tokens = await TokenStore.open(db, now)
    const events = new EventStore(db, { retention: config.file.events?.retention, now })
    const audit = new AuditLog(db, now)
    const approvals = new ApprovalService(config.approval, { events, audit, now })
    const workspaces = await WorkspaceRegistry.start(config.workspaces, {
      events,
      logger: options.logger,
      debounceMs: config.file.events?.debounceMs,
      watch: options.watch,
      snapshotDir: join(config.dataDir, 'workspace-snapshots'),
    })
    const gate = new WriteGate({ readOnly: config.readOnly, approvals, audit })
    const t = config.file.authThrottle
    const throttle = new AuthThrottle(
      {
        maxFailures: t?.maxFailures ?? DEFAULT_AUTH_THROTTLE.maxFailures,
        windowSeconds: t?.windowSeconds ?? DEFAULT_AUTH_THROTTLE.windowSeconds,
        lockoutSeconds: t?.lockoutSeconds ?? DEFAULT_AUTH_THROTTLE.lockoutSeconds,
      },
      now,
    )
    let closed = false
    return {
      config,
      db,
      tokens,
      events,
      audit,
      approvals,
      workspaces,
      gate,
      throttle,
      now,
      async close() {
        if (closed) return
        closed = true
        approvals.close()
        workspaces.close()
        await events.drain().catch(() => {})
        await db.close()
      },
    }
  } catch (error) {
    await db.close()
    throw error
  }
}
