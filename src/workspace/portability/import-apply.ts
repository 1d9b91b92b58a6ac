/**
 * Applies an import plan all-or-nothing. Every new file is first written to a fsynced temp file
 * next to its target; then each target is moved aside to a backup name and the temp renamed into
 * place (deletes only move aside). If any step fails, the steps done so far are undone in reverse
 * (placed files removed, backups renamed back, directories it created removed), so the workspace is exactly as before; on success
 * the backups are removed. Runs under the workspace lock.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ApiError } from '../../core/errors.ts'
import { syncDirectory, tempPathFor, writeTemp } from '../files/atomic-write.ts'
import { assertDirStillInside, prepareWriteTarget } from '../files/workspace-path.ts'
import type { PlannedChange } from './import-plan.ts'

type Step = { kind: 'backup'; target: string; backup: string } | { kind: 'placed'; target: string }

/** Applies the changed items of a plan; throws 500 `import_failed` (with nothing changed) on failure. */
export async function applyImport(root: string, changes: PlannedChange[]): Promise<void> {
  const work = changes.filter((c) => c.action !== 'unchanged')
  const staged = new Map<PlannedChange, { target: string; temp: string }>()
  const steps: Step[] = []
  const createdDirs: string[] = []
  try {
    for (const change of work) {
      if (change.after === null) continue
      const target = await prepareWriteTarget(root, change.path, { created: createdDirs })
      const temp = tempPathFor(target)
      await writeTemp(temp, change.after)
      staged.set(change, { target, temp })
    }
    for (const change of work) {
      // A removed skill takes its whole directory (scripts and all), as the skills route does.
      const target = staged.get(change)?.target ?? (change.kind === 'skill' ? join(root, dirname(change.path)) : join(root, change.path))
      if (await fsp.lstat(target).then(() => true, () => false)) {
        const backup = tempPathFor(target, 'bak-')
        await fsp.rename(target, backup)
        steps.push({ kind: 'backup', target, backup })
      }
      const placed = staged.get(change)
      if (placed) {
        await assertDirStillInside(root, dirname(placed.target))
        await fsp.rename(placed.temp, placed.target)
        staged.delete(change)
        steps.push({ kind: 'placed', target: placed.target })
      }
    }
  } catch (error) {
    for (const step of steps.reverse()) {
      if (step.kind === 'placed') await fsp.rm(step.target, { force: true }).catch(() => {})
      else await fsp.rename(step.backup, step.target).catch(() => {})
    }
    for (const { temp } of staged.values()) await fsp.rm(temp, { force: true }).catch(() => {})
    for (const dir of createdDirs.reverse()) await fsp.rmdir(join(root, dir)).catch(() => {})
    throw new ApiError(500, 'import_failed', `Import failed and was rolled back; nothing was changed (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  for (const step of steps) if (step.kind === 'backup') await fsp.rm(step.backup, { recursive: true, force: true }).catch(() => {})
  const dirs = new Set(steps.map((s) => dirname(s.target)))
  for (const dir of dirs) await syncDirectory(dir)
}
