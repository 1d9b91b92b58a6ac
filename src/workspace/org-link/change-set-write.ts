/**
 * One organization change set as one gated write: approval (in manual mode) with the diff of every
 * path, the workspace lock, the all-or-nothing import writer, one reload event and one audit entry.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { Principal } from '../access/auth.ts'
import type { WriteGate } from '../approvals/write-gate.ts'
import { applyImport } from '../portability/import-apply.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import type { SyncPlan } from './sync-plan.ts'

/** Writes `plan` through the gate; rejects with `write_denied`, `write_conflict` or the writer's error. */
export async function writeChangeSet(
  deps: { gate: WriteGate; logger: Logger; workspace: WorkspaceRuntime },
  plan: Pick<SyncPlan, 'changes' | 'counts'>,
  options: { what: string; principal: Principal; approval: 'required' | 'skip'; signal?: AbortSignal; target: string },
): Promise<void> {
  const ws = deps.workspace
  const root = ws.entry.path
  const { create, update, delete: removed } = plan.counts
  const summary = `Organization change set ${options.what}: ${create} created, ${update} updated, ${removed} removed`
  await deps.gate.run({
    workspace: ws,
    principal: options.principal,
    action: 'org.apply',
    summary,
    target: options.target,
    paths: plan.changes.map((c) => c.path),
    approval: options.approval,
    signal: options.signal,
    changes: async () =>
      plan.changes.map((c) => ({
        path: c.path,
        after: c.after,
        ...(c.mode === undefined ? {} : { executable: (c.mode & 0o111) !== 0 }),
      })),
    apply: () =>
      applyImport(root, plan.changes, (error) =>
        deps.logger.error('organization change set failed and was rolled back', {
          workspaceId: ws.entry.id,
          error: (error as Error)?.message ?? String(error),
        }),
      ),
    record: async () => {
      const config = plan.changes.some((c) => c.kind === 'opencode')
      const skills = plan.changes.some((c) => c.path.startsWith('.opencode/skills/'))
      await ws.tracker.commit(config ? 'config' : skills ? 'skills' : 'commands', {
        type: config ? 'config' : skills ? 'skill' : 'command',
        name: 'organization',
        action: 'updated',
      })
      return { target: options.target, summary }
    },
  })
}
