/**
 * Connects governed allow-list rows to the workspace's approval gate and audit log, so a config
 * change through the proxy is held for the host exactly like `PATCH /workspace/:id/config`, and every
 * credential or machine-wide change through it leaves an audit entry naming the caller.
 *
 * Not the write gate, on purpose: the gate describes, locks, re-checks and applies a write the
 * server itself makes, but here OpenCode makes the write in its own process after the proxied
 * request goes through. The server never sees the resulting file content (no diff to show), cannot
 * hold the workspace lock across another process's write, and has nothing to apply atomically or
 * contain; what it can do, approval before forwarding and an audit entry, it does here.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { ApprovalService } from '../approvals/approvals.ts'
import { actorOf, type AuditLog } from '../events/audit-log.ts'
import type { ProxyGovernance } from './sidecar-proxy.ts'
import { workspaceError } from '../workspace-errors.ts'

/** Builds the proxy's governance hooks over the workspace services. */
export function sidecarGovernance(deps: {
  approvals: ApprovalService
  audit: AuditLog
  log: Logger
  /** The workspace's directory, named in the approval request as the path the write touches. */
  directoryOf: (workspaceId: string) => string | undefined
}): ProxyGovernance {
  return {
    async approve(input) {
      const directory = deps.directoryOf(input.workspaceId)
      const outcome = await deps.approvals.request(
        {
          workspaceId: input.workspaceId,
          action: input.action,
          summary: input.summary,
          paths: directory ? [directory] : [],
          actor: actorOf(input.principal),
        },
        input.signal,
      )
      if (!outcome.allowed) {
        throw workspaceError('write_denied', 'Write request denied', {
          details: { requestId: outcome.id, reason: outcome.reason },
        })
      }
    },
    audit(input) {
      deps.audit
        .record({
          workspaceId: input.workspaceId,
          actor: actorOf(input.principal),
          action: input.action,
          target: 'sidecar',
          summary: input.summary,
        })
        .catch((error) =>
          deps.log.warn('audit of a sidecar call failed', { error: (error as Error).message, action: input.action }),
        )
    },
  }
}
