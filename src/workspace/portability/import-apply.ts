/**
 * Applies an import plan all-or-nothing. Every new file is first written to a fsynced temp file
 * next to its target; then each target is moved aside to a backup name and the temp renamed into
 * place (deletes only move aside). If any step fails, the steps done so far are undone in reverse
 * (placed files removed, backups renamed back, directories it created removed), so the workspace
 * is exactly as before; on success the backups are removed. Every step goes through a pinned
 * parent directory (see `pinDirectory`). Runs under the workspace lock.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { ApiError } from '../../core/errors.ts'
import { workspaceError } from '../workspace-errors.ts'
import { replacedFile, tempName, writeTemp } from '../base/atomic-write.ts'
import { pinDirectory, splitRel, writeSlot } from '../base/workspace-path.ts'
import type { PlannedChange } from './import-plan.ts'

/** Where an entry lives: its parent (workspace-relative) and name. */
type Slot = { parent: string; name: string }
type Step = { kind: 'backup'; slot: Slot; backup: string } | { kind: 'placed'; slot: Slot }

async function inDir<T>(root: string, parent: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await pinDirectory(root, parent, false)
  try {
    const result = await fn(dir.path)
    await dir.sync()
    return result
  } finally {
    await dir.close()
  }
}

/**
 * What a failed (and rolled back) import answers: the error itself when it is already one of ours
 * (a path that resolves outside, 400 `invalid_path`); 409 `import_target_conflict` when a target
 * changed kind since the preview; 507 `import_storage_full` when the disk is full; anything else the
 * opaque 500 `import_failed`, its cause passed to `onUnexpected` (for the log), never to the client.
 */
export function importFailure(error: unknown, onUnexpected?: (error: unknown) => void): ApiError {
  if (error instanceof ApiError) return error
  const code = (error as NodeJS.ErrnoException | null)?.code
  if (code === 'EISDIR' || code === 'ENOTDIR' || code === 'EEXIST' || code === 'ENOTEMPTY')
    return workspaceError(
      'import_target_conflict',
      'A target changed kind since the preview (a file where a folder must be, or the reverse); the import was rolled back and nothing was changed',
    )
  if (code === 'ENOSPC' || code === 'EDQUOT') return workspaceError('import_storage_full')
  onUnexpected?.(error)
  return workspaceError('import_failed')
}

/**
 * Applies the changed items of a plan; on failure everything is rolled back and the error is
 * mapped by {@link importFailure}.
 */
export async function applyImport(
  root: string,
  changes: PlannedChange[],
  onUnexpected?: (error: unknown) => void,
): Promise<void> {
  const work = changes.filter((c) => c.action !== 'unchanged')
  const staged = new Map<PlannedChange, { slot: Slot; temp: string }>()
  const steps: Step[] = []
  const createdDirs: string[] = []
  try {
    for (const change of work) {
      if (change.after === null) continue
      const { dir, name } = await writeSlot(root, change.path, { created: createdDirs })
      try {
        const temp = tempName(name)
        await writeTemp(`${dir.path}/${temp}`, change.after, {
          mode: change.mode,
          replacing: await replacedFile(dir, name),
        })
        const real = dir.real
        staged.set(change, { slot: { parent: real === root ? '' : real.slice(root.length + 1), name }, temp })
      } finally {
        await dir.close()
      }
    }
    for (const change of work) {
      // A removed skill takes its whole directory (scripts and all), as the skills route does.
      const slot =
        staged.get(change)?.slot ??
        splitRel(
          change.kind === 'skill' && change.after === null ? change.path.replace(/\/SKILL\.md$/, '') : change.path,
        )
      const wholeSkill = change.kind === 'skill' && change.after === null
      await inDir(root, slot.parent, async (dir) => {
        const existing = await fsp.lstat(`${dir}/${slot.name}`).catch(() => null)
        // Only a removed skill replaces a directory; anything else found there since planning
        // would be deleted with the backup, so it stops (and rolls back) the import.
        if (existing?.isDirectory() && !wholeSkill)
          throw Object.assign(new Error(`${change.path} is a directory`), { code: 'EISDIR' })
        if (existing) {
          const backup = tempName(slot.name, 'bak-')
          await fsp.rename(`${dir}/${slot.name}`, `${dir}/${backup}`)
          steps.push({ kind: 'backup', slot, backup })
        }
        const placed = staged.get(change)
        if (placed) {
          await fsp.rename(`${dir}/${placed.temp}`, `${dir}/${slot.name}`)
          staged.delete(change)
          steps.push({ kind: 'placed', slot })
        }
      })
    }
  } catch (error) {
    for (const step of steps.reverse()) {
      await inDir(root, step.slot.parent, async (dir) => {
        if (step.kind === 'placed') await fsp.rm(`${dir}/${step.slot.name}`, { force: true })
        else await fsp.rename(`${dir}/${step.backup}`, `${dir}/${step.slot.name}`)
      }).catch(() => {})
    }
    for (const { slot, temp } of staged.values())
      await inDir(root, slot.parent, (dir) => fsp.rm(`${dir}/${temp}`, { force: true })).catch(() => {})
    for (const rel of createdDirs.reverse()) {
      const { parent, name } = splitRel(rel)
      await inDir(root, parent, (dir) => fsp.rmdir(`${dir}/${name}`)).catch(() => {})
    }
    throw importFailure(error, onUnexpected)
  }
  for (const step of steps) {
    if (step.kind === 'backup')
      await inDir(root, step.slot.parent, (dir) =>
        fsp.rm(`${dir}/${step.backup}`, { recursive: true, force: true }),
      ).catch(() => {})
  }
}
