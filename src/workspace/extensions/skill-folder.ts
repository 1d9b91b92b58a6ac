/**
 * A skill's folder on disk as a bundle (see `src/opencode/skill-bundle.ts`): read every file
 * beside SKILL.md with its executable bit, compare two folders file by file, and replace a folder
 * atomically. Reads never follow a symlink or leave the workspace: a symlink, device or socket
 * inside a skill folder is skipped (it would not travel), as are `.git`, `node_modules`,
 * `.DS_Store` and the server's temp files.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { tempName, writeTemp } from '../base/atomic-write.ts'
import { isTempName, openForRead, pinDirectory, resolveExisting } from '../base/workspace-path.ts'
import {
  type BundleFile,
  executableFromMode,
  isExcludedSegment,
  modeFor,
  SKILL_FILE,
  sortFiles,
} from '../../opencode/skill-bundle.ts'
import { sha256Hex } from '../../core/sha256.ts'
import { SKILLS_DIR } from '../config/workspace-layout.ts'

/** The workspace-relative folder of a skill. */
export const skillDir = (name: string): string => `${SKILLS_DIR}/${name}`

/** Files of a skill's folder other than SKILL.md, sorted by path; [] when the folder is missing. */
export async function readSkillFolder(root: string, name: string): Promise<BundleFile[]> {
  const base = skillDir(name)
  if ((await resolveExisting(root, base)) === null) return []
  const out: BundleFile[] = []
  const visit = async (rel: string): Promise<void> => {
    const real = await resolveExisting(root, `${base}${rel ? `/${rel}` : ''}`).catch(() => null)
    if (!real) return
    let entries: import('node:fs').Dirent[]
    try {
      entries = await fsp.readdir(real, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      if (isTempName(entry.name) || isExcludedSegment(entry.name)) continue
      const child = rel ? `${rel}/${entry.name}` : entry.name
      if (child === SKILL_FILE) continue
      if (entry.isDirectory()) await visit(child)
      else if (entry.isFile()) {
        const opened = await openForRead(root, `${base}/${child}`).catch(() => null)
        if (!opened) continue
        try {
          const st = await opened.handle.stat()
          if (!st.isFile()) continue
          const bytes = new Uint8Array(await opened.handle.readFile())
          out.push({ path: child, bytes, executable: executableFromMode(st.mode) })
        } finally {
          await opened.handle.close()
        }
      }
    }
  }
  await visit('')
  return sortFiles(out)
}

/** One file-level difference between a skill folder on disk and what a write would make. */
export interface SkillFileChange {
  path: string
  action: 'create' | 'update' | 'delete'
}

/** File-level changes from `before` to `after` (SKILL.md compared by text), sorted by path. */
export function diffSkillFolder(
  before: { text: string | null; files: BundleFile[] },
  after: { text: string; files: BundleFile[] },
): SkillFileChange[] {
  const changes: SkillFileChange[] = []
  if (before.text === null) changes.push({ path: SKILL_FILE, action: 'create' })
  else if (before.text !== after.text) changes.push({ path: SKILL_FILE, action: 'update' })
  const old = new Map(before.files.map((f) => [f.path, f]))
  for (const file of after.files) {
    const was = old.get(file.path)
    if (!was) changes.push({ path: file.path, action: 'create' })
    else if (was.executable !== file.executable || sha256Hex(was.bytes) !== sha256Hex(file.bytes))
      changes.push({ path: file.path, action: 'update' })
    old.delete(file.path)
  }
  for (const path of old.keys()) changes.push({ path, action: 'delete' })
  return sortFiles(changes)
}

/**
 * Replaces a skill's folder with SKILL.md `text` and `files`, atomically: the new folder is built
 * (every file fsynced, with its mode) under a temp name beside it in the pinned skills folder,
 * the old folder is renamed aside, the new one renamed into place and the old one removed. A
 * failure before the swap removes the temp folder and leaves the skill as it was.
 */
export async function replaceSkillFolder(root: string, name: string, text: string, files: BundleFile[]): Promise<void> {
  const dir = await pinDirectory(root, SKILLS_DIR, true)
  const temp = tempName(name)
  const tempPath = `${dir.path}/${temp}`
  try {
    await fsp.mkdir(tempPath, { mode: 0o755 })
    try {
      await writeTemp(`${tempPath}/${SKILL_FILE}`, text, { mode: 0o644 })
      for (const file of files) {
        const slash = file.path.lastIndexOf('/')
        if (slash > 0) await fsp.mkdir(`${tempPath}/${file.path.slice(0, slash)}`, { recursive: true, mode: 0o755 })
        await writeTemp(`${tempPath}/${file.path}`, file.bytes, { mode: modeFor(file.executable) })
      }
      const existing = await fsp.lstat(`${dir.path}/${name}`).catch(() => null)
      const backup = existing ? tempName(name, 'bak-') : null
      if (backup) await fsp.rename(`${dir.path}/${name}`, `${dir.path}/${backup}`)
      try {
        await fsp.rename(tempPath, `${dir.path}/${name}`)
      } catch (error) {
        if (backup) await fsp.rename(`${dir.path}/${backup}`, `${dir.path}/${name}`).catch(() => {})
        throw error
      }
      await dir.sync()
      if (backup) await fsp.rm(`${dir.path}/${backup}`, { recursive: true, force: true }).catch(() => {})
    } catch (error) {
      await fsp.rm(tempPath, { recursive: true, force: true }).catch(() => {})
      throw error
    }
  } finally {
    await dir.close()
  }
}
