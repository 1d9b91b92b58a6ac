/**
 * What a workspace export carries: the portable keys of the project config, the server's
 * per-workspace settings, skills, commands, and the files under `.opencode/agents`, `plugins` and
 * `tools`. Environment files, OS litter and dependency folders never travel, in either direction.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { assertNotTemp, isTempName, normalizeRelPath, resolveExisting } from '../base/workspace-path.ts'
import { workspaceError } from '../workspace-errors.ts'

/** Project config keys that describe behaviour rather than a machine or a person. */
export const PORTABLE_OPENCODE_KEYS = [
  '$schema',
  'agent',
  'command',
  'default_agent',
  'instructions',
  'mcp',
  'model',
  'small_model',
  'permission',
  'plugin',
  'provider',
  'share',
  'tools',
  'watcher',
  'formatter',
  'lsp',
  'mode',
] as const

/** Folders whose files travel with an export. */
export const PORTABLE_DIRS = ['.opencode/agents', '.opencode/plugins', '.opencode/tools'] as const

const EXCLUDED_SEGMENT = /^(\.env(\..*)?|\.DS_Store|Thumbs\.db|node_modules|\.git)$/i
/** Portable files larger than this are not exported (they are not configuration). */
export const MAX_PORTABLE_FILE_BYTES = 1_000_000

/** Validates an imported file path: normal, inside a portable folder, no excluded segment. */
export function portablePath(raw: unknown): string {
  let rel: string
  try {
    rel = normalizeRelPath(raw)
    assertNotTemp(rel)
  } catch (error) {
    throw workspaceError('invalid_portable_file_path', `Portable file path is not allowed: ${(error as Error).message}`)
  }
  const allowed = PORTABLE_DIRS.some((dir) => rel.startsWith(dir + '/'))
  if (!allowed || rel.split('/').some((part) => EXCLUDED_SEGMENT.test(part))) {
    throw workspaceError('invalid_portable_file_path', `Portable file path is not allowed: ${rel}`)
  }
  return rel
}

/** The portable subset of the project config. */
export function portableOpencode(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of PORTABLE_OPENCODE_KEYS) if (key in config) out[key] = config[key]
  return out
}

/** Portable files on disk (regular UTF-8 text files, no symlinks), sorted by path. */
export async function listPortableFiles(root: string): Promise<Array<{ path: string; content: string }>> {
  const out: Array<{ path: string; content: string }> = []
  const visit = async (rel: string): Promise<void> => {
    const real = await resolveExisting(root, rel).catch(() => null)
    if (!real) return
    let entries: import('node:fs').Dirent[]
    try {
      entries = await fsp.readdir(real, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (isTempName(entry.name) || EXCLUDED_SEGMENT.test(entry.name)) continue
      const child = `${rel}/${entry.name}`
      if (entry.isDirectory()) await visit(child)
      else if (entry.isFile()) {
        const st = await fsp.stat(join(real, entry.name))
        if (st.size > MAX_PORTABLE_FILE_BYTES) continue
        const bytes = await fsp.readFile(join(real, entry.name))
        const text = bytes.toString('utf8')
        if (Buffer.from(text, 'utf8').equals(bytes)) out.push({ path: child, content: text })
      }
    }
  }
  for (const dir of PORTABLE_DIRS) await visit(dir)
  return out
}
