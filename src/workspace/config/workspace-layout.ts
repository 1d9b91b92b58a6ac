/**
 * Where a workspace keeps its configuration and extensions (OpenCode layout), and how a changed
 * file maps to an event reason. One table, used by readers, writers and the change watcher.
 *
 * Listings are synchronous: each is one small directory read, cheaper than a thread-pool round
 * trip, and the change watcher's start-up scan then never wakes the runtime's I/O threads (an idle
 * desktop server keeps them, and their memory, asleep until a request needs them).
 * @module
 */
import { readdirSync, type Dirent } from 'node:fs'
import { join } from 'node:path'

/** Why a reload event happened (the reference's `reason`). */
export type ReloadReason = 'config' | 'plugins' | 'skills' | 'mcp' | 'commands'

/** What changed. */
export interface EventTrigger {
  type: 'config' | 'plugin' | 'skill' | 'mcp' | 'command'
  name?: string
  action?: 'added' | 'removed' | 'updated'
  /** Workspace-relative path of the file that changed. */
  path?: string
}

/** Project config candidates, in precedence order (`.jsonc` wins when both exist). */
export const OPENCODE_CONFIG_FILES = ['opencode.jsonc', 'opencode.json'] as const
/** The server's own per-workspace settings file (the reference's `.opencode/openwork.json`). */
export const SERVICE_CONFIG_FILE = '.opencode/service.json'
export const SKILLS_DIR = '.opencode/skills'
export const COMMANDS_DIR = '.opencode/commands'
export const PLUGINS_DIR = '.opencode/plugins'
/** Plugin files are loaded from these extensions only. */
export const PLUGIN_EXTENSIONS = ['.js', '.ts'] as const

/** The relative path of a skill's file. */
export const skillFile = (name: string): string => `${SKILLS_DIR}/${name}/SKILL.md`
/** The relative path of a command's file. */
export const commandFile = (name: string): string => `${COMMANDS_DIR}/${name}.md`

function names(dir: string, keep: (entry: Dirent) => boolean): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter(keep)
      .map((e) => e.name)
      .sort()
  } catch {
    return []
  }
}

/** Skill directory names present on disk (validity is checked by the reader). */
export function skillDirNames(root: string): string[] {
  return names(join(root, SKILLS_DIR), (e) => e.isDirectory())
}

/** Command file names (`*.md`, regular files) present on disk. */
export function commandFileNames(root: string): string[] {
  return names(join(root, COMMANDS_DIR), (e) => e.isFile() && e.name.endsWith('.md'))
}

/** Plugin file names (`*.js`, `*.ts`, regular files) present on disk. */
export function pluginFileNames(root: string): string[] {
  return names(join(root, PLUGINS_DIR), (e) => e.isFile() && PLUGIN_EXTENSIONS.some((x) => e.name.endsWith(x)))
}

/** Every file whose content the change watcher tracks, relative to the root. */
export function trackedFiles(root: string): string[] {
  return [
    ...OPENCODE_CONFIG_FILES,
    SERVICE_CONFIG_FILE,
    ...skillDirNames(root).map(skillFile),
    ...commandFileNames(root).map((c) => `${COMMANDS_DIR}/${c}`),
    ...pluginFileNames(root).map((p) => `${PLUGINS_DIR}/${p}`),
  ]
}

/** Directories the watcher observes (non-recursively): the root, `.opencode`, and each extension directory. */
export function watchedDirs(root: string): string[] {
  const skills = skillDirNames(root)
  return ['', '.opencode', SKILLS_DIR, COMMANDS_DIR, PLUGINS_DIR, ...skills.map((s) => `${SKILLS_DIR}/${s}`)]
}

/** The event reason and trigger for a changed tracked file. */
export function classifyChange(
  rel: string,
  action: 'added' | 'removed' | 'updated',
): { reason: ReloadReason; trigger: EventTrigger } {
  if (rel.startsWith(`${SKILLS_DIR}/`))
    return { reason: 'skills', trigger: { type: 'skill', name: rel.split('/')[2], action, path: rel } }
  if (rel.startsWith(`${COMMANDS_DIR}/`))
    return {
      reason: 'commands',
      trigger: { type: 'command', name: rel.split('/')[2]!.replace(/\.md$/, ''), action, path: rel },
    }
  if (rel.startsWith(`${PLUGINS_DIR}/`))
    return { reason: 'plugins', trigger: { type: 'plugin', name: rel.split('/')[2], action, path: rel } }
  return { reason: 'config', trigger: { type: 'config', name: rel.split('/').pop(), action, path: rel } }
}
