/**
 * Import (spec §2, reference §1.13) through the write gate: the caller must have seen the preview
 * (its fingerprint), the approval describes every file the import would change, and under the
 * workspace lock the plan is rebuilt and must still match before it is applied all-or-nothing.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { ApiError } from '../../core/errors.ts'
import type { Principal } from '../access/auth.ts'
import type { WriteGate } from '../approvals/write-gate.ts'
import type { FileService } from '../files/file-service.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import { workspaceError } from '../workspace-errors.ts'
import { applyImport } from './import-apply.ts'
import { describeChanges, type ImportPayload, type ImportPreview, planImport, previewOf } from './import-plan.ts'
import type { SkillLimits } from '../../opencode/skill-bundle.ts'

/** What an import needs from the server. */
export interface ImportDeps {
  gate: WriteGate
  files: FileService
  logger: Logger
  skillLimits: SkillLimits
}

/** One import request, as the route parsed it. */
export interface ImportRequest {
  workspace: WorkspaceRuntime
  principal: Principal
  payload: ImportPayload
  /** The fingerprint of the preview the caller saw (required when anything would change). */
  previewFingerprint: unknown
  signal?: AbortSignal
}

function previewConflict(
  code: 'workspace_import_preview_required' | 'workspace_import_preview_stale',
  message: string,
  preview: ImportPreview,
): ApiError {
  return workspaceError(code, message, { extra: { ok: false, preview } })
}

/**
 * Imports a bundle; resolves with the preview of what was applied (or of nothing to do). 409
 * `workspace_import_preview_required`/`_stale` carry a fresh preview; failures while applying are
 * rolled back and answer a stable code (see `importFailure`).
 */
export async function importWorkspace(deps: ImportDeps, input: ImportRequest): Promise<ImportPreview> {
  deps.gate.ensureWritable()
  const ws = input.workspace
  const root = ws.entry.path
  const fingerprint = input.previewFingerprint
  if (fingerprint !== undefined && typeof fingerprint !== 'string')
    throw workspaceError('invalid_workspace_import_preview_fingerprint', 'previewFingerprint must be a string')
  const plan = await planImport(root, input.payload, deps.skillLimits)
  const preview = previewOf(plan)
  if (fingerprint !== undefined && fingerprint !== preview.fingerprint)
    throw previewConflict(
      'workspace_import_preview_stale',
      'The workspace changed since the preview; review the new preview',
      preview,
    )
  const changed = plan.filter((c) => c.action !== 'unchanged')
  if (!changed.length) return preview
  if (fingerprint === undefined)
    throw previewConflict('workspace_import_preview_required', 'Preview the import and pass its fingerprint', preview)
  const log = deps.files.events(ws)
  let applied = preview
  await deps.gate.run({
    workspace: ws,
    principal: input.principal,
    signal: input.signal,
    action: 'config.import',
    summary: `Import workspace config (${describeChanges(preview)})`,
    target: changed
      .map((c) => c.path)
      .slice(0, 20)
      .join(', '),
    paths: changed.map((c) => c.path),
    // The whole plan is rebuilt under the lock and compared by fingerprint, which is stricter than
    // comparing the listed files.
    recheck: 'writer',
    changes: async () => changed.map((c) => ({ path: c.path, after: c.after })),
    apply: async () => {
      const again = previewOf(await planImport(root, input.payload, deps.skillLimits))
      if (again.fingerprint !== preview.fingerprint)
        throw previewConflict(
          'workspace_import_preview_stale',
          'The workspace changed while the import awaited approval; nothing was written',
          again,
        )
      await applyImport(root, plan, (error) =>
        deps.logger.error('import failed and was rolled back', {
          workspaceId: ws.entry.id,
          error: (error as Error)?.message ?? String(error),
        }),
      )
      for (const c of changed)
        log.append(
          c.after === null
            ? {
                type: 'delete',
                path: c.kind === 'skill' ? c.path.replace(/\/SKILL\.md$/, '') : c.path,
                source: 'server',
              }
            : { type: 'write', path: c.path, source: 'server' },
        )
      applied = again
    },
    record: async () => {
      await ws.tracker.commit('config', { type: 'config', name: 'import', action: 'updated' })
      return {
        target: changed
          .map((c) => c.path)
          .slice(0, 20)
          .join(', '),
        summary: `Imported workspace config (${describeChanges(applied)})`,
      }
    },
  })
  return applied
}
