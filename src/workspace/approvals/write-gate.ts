/**
 * The one path every workspace write takes: read-only check → fingerprint of the target →
 * approval → (under the workspace lock) re-check that the target did not change while waiting →
 * apply → record the event → audit. A denied, timed-out or stale write changes nothing. The
 * approval carries what would change (per path: action, and a diff or size and digest).
 * @module
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ApiError } from '../../core/errors.ts'
import { createSha256 } from '../../core/sha256.ts'
import type { ApprovalService } from './approvals.ts'
import { describeChanges, type ProposedChange } from './change-description.ts'
import { actorOf, type AuditLog } from '../events/audit-log.ts'
import type { Principal } from '../access/auth.ts'
import type { EventTrigger, ReloadReason } from '../config/workspace-layout.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import { workspaceError } from '../workspace-errors.ts'

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
  /** Reload event of the write (with `trigger`), unless `record` records it another way. */
  reason?: ReloadReason
  trigger?: EventTrigger
  /** The client's request signal: a held write is withdrawn when the client disconnects. */
  signal?: AbortSignal
  /**
   * What the write would leave at each path it changes: the approval describes it (action, diff or
   * size and digest). Every path is checked inside the workspace before anyone is asked.
   */
  changes?(): Promise<ProposedChange[]>
  /**
   * `required` (default) asks the host when the mode is manual; `skip` does not (the write changes
   * nothing, or the host exempted this kind of write, e.g. `inbox.requireApproval: false`).
   */
  approval?: 'required' | 'skip'
  /**
   * How a change made while the write waited is caught: `fingerprint` (default) compares the
   * `paths` and answers 409 `write_conflict`; `writer` leaves it to `apply` (per-item revisions of
   * a file batch, the re-planned import).
   */
  recheck?: 'fingerprint' | 'writer'
  /** A batch whose items fail one by one: a path outside the workspace is left out of the description. */
  perItem?: boolean
  /** Performs the write; runs under the workspace lock. */
  apply(): Promise<T>
  /**
   * Records the write's events (under the lock) and says what to audit, or null when nothing was
   * written. Without it the gate commits the `reason`/`trigger` reload event and audits
   * `target`/`summary` when that event says something changed.
   */
  record?(result: T): Promise<{ target: string; summary: string } | null>
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
  return workspaceError('read_only', 'Server is read-only')
}

async function fingerprint(root: string, paths: string[]): Promise<string> {
  const hash = createSha256()
  for (const rel of [...paths].sort()) {
    hash.update(rel + '\0')
    try {
      hash.update(await readFile(join(root, rel)))
      hash.update('\x01')
    } catch {
      hash.update('\x02missing')
    }
  }
  return hash.hex()
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
    const changes = write.changes
      ? await describeChanges(root, await write.changes(), { perItem: write.perItem })
      : undefined
    const recheck = write.recheck !== 'writer'
    const before = recheck ? await fingerprint(root, write.paths) : ''
    const actor = actorOf(write.principal)
    const outcome =
      write.approval === 'skip'
        ? { id: 'skipped', allowed: true as const }
        : await this.deps.approvals.request(
            {
              workspaceId: write.workspace.entry.id,
              action: write.action,
              summary: write.summary,
              paths: write.paths.map((rel) => join(root, rel)),
              actor,
              ...(changes ? { changes } : {}),
            },
            write.signal,
          )
    if (!outcome.allowed) {
      throw workspaceError('write_denied', 'Write request denied', {
        details: { requestId: outcome.id, reason: outcome.reason },
      })
    }
    return write.workspace.lock.run(async () => {
      if (recheck && (await fingerprint(root, write.paths)) !== before) {
        throw workspaceError(
          'write_conflict',
          'The target changed while the write awaited approval; re-read and retry',
          { details: { requestId: outcome.id, paths: write.paths } },
        )
      }
      const result = await write.apply()
      const entry = write.record ? await write.record(result) : await this.#commit(write)
      if (entry) {
        await this.deps.audit.record({ workspaceId: write.workspace.entry.id, actor, action: write.action, ...entry })
        // Cached bodies carry the last write time (config `updatedAt`); drop any built meanwhile.
        write.workspace.cache.invalidate()
      }
      return result
    })
  }

  async #commit<T>(write: GatedWrite<T>): Promise<{ target: string; summary: string } | null> {
    if (!write.reason || !write.trigger)
      throw new Error(`${write.action}: a gated write needs reason and trigger, or record`)
    const event = await write.workspace.tracker.commit(write.reason, write.trigger)
    return event ? { target: write.target, summary: write.summary } : null
  }
}
