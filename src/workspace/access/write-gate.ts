/**
 * The one path every workspace write takes: read-only check → fingerprint of the target →
 * approval → (under the workspace lock) re-check that the target did not change while waiting →
 * apply → record the event → audit. A denied, timed-out or stale write changes nothing.
 * @module
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ApiError } from '../../core/errors.ts'
import type { ApprovalService } from './approvals.ts'
import { actorOf, type AuditLog } from '../events/audit-log.ts'
import type { Principal } from './auth.ts'
import type { EventTrigger, ReloadReason } from '../events/event-store.ts'
import type { WorkspaceRuntime } from '../runtime/workspace-registry.ts'

/** One gated write. */
export interface GatedWrite<T> {
  workspace: WorkspaceRuntime
  principal: Principal
  /** Approval and audit action, e.g. `skills.upsert`. */
  action: string
  /** Human summary shown to the approver and in the audit log. */
  summary: string
  /** Audit target (usually the extension name). */
  target: string
  /** Workspace-relative files the write may touch; their content must not change while it waits. */
  paths: string[]
  reason: ReloadReason
  trigger: EventTrigger
  /** The client's request signal: a held write is withdrawn when the client disconnects. */
  signal?: AbortSignal
  /** Performs the write; runs under the workspace lock. */
  apply(): Promise<T>
  /**
   * True when the write would change nothing on disk. Such a write skips approval (the host is not
   * asked about nothing) and records nothing; `run` then resolves with undefined.
   */
  unchanged?(): Promise<boolean>
}

/** True when two JSON values serialise identically (key order matters; a false "changed" only costs an approval). */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** True when the file at `root/rel` holds exactly `text`. */
export async function fileHolds(root: string, rel: string, text: string): Promise<boolean> {
  try {
    return (await readFile(join(root, rel), 'utf8')) === text
  } catch {
    return false
  }
}

/** The error every read-only rejection uses. */
export function readOnlyError(): ApiError {
  return new ApiError(403, 'read_only', 'Server is read-only')
}

async function fingerprint(root: string, paths: string[]): Promise<string> {
  const hash = createHash('sha256')
  for (const rel of [...paths].sort()) {
    hash.update(rel + '\0')
    try {
      hash.update(await readFile(join(root, rel)))
      hash.update('\x01')
    } catch {
      hash.update('\x02missing')
    }
  }
  return hash.digest('hex')
}

/** Runs gated writes for all workspaces. */
export class WriteGate {
  constructor(private readonly deps: { readOnly: boolean; approvals: ApprovalService; audit: AuditLog }) {}

  /** True when the server refuses every write. */
  get readOnly(): boolean {
    return this.deps.readOnly
  }

  /** Throws 403 `read_only` when the server is read-only. */
  ensureWritable(): void {
    if (this.deps.readOnly) throw readOnlyError()
  }

  /** Runs a write through approval; resolves with `apply`'s result. */
  async run<T>(write: GatedWrite<T>): Promise<T | undefined> {
    this.ensureWritable()
    if (write.unchanged && (await write.unchanged())) return undefined
    const root = write.workspace.entry.path
    const before = await fingerprint(root, write.paths)
    const actor = actorOf(write.principal)
    const outcome = await this.deps.approvals.request(
      {
        workspaceId: write.workspace.entry.id,
        action: write.action,
        summary: write.summary,
        paths: write.paths.map((rel) => join(root, rel)),
        actor,
      },
      write.signal,
    )
    if (!outcome.allowed) {
      throw new ApiError(403, 'write_denied', 'Write request denied', {
        details: { requestId: outcome.id, reason: outcome.reason },
      })
    }
    return write.workspace.lock.run(async () => {
      if ((await fingerprint(root, write.paths)) !== before) {
        throw new ApiError(
          409,
          'write_conflict',
          'The target changed while the write awaited approval; re-read and retry',
          { details: { requestId: outcome.id, paths: write.paths } },
        )
      }
      const result = await write.apply()
      const event = await write.workspace.tracker.commit(write.reason, write.trigger)
      if (event) {
        await this.deps.audit.record({
          workspaceId: write.workspace.entry.id,
          actor,
          action: write.action,
          target: write.target,
          summary: write.summary,
        })
        // Cached bodies carry the last write time (config `updatedAt`); drop any built meanwhile.
        write.workspace.cache.invalidate()
      }
      return result
    })
  }
}
