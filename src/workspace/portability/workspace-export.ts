/**
 * `GET /workspace/:id/export`: the workspace's portable configuration as one JSON document.
 * Secrets decide the outcome: in `auto` mode any finding answers 409
 * `workspace_export_requires_decision` with the warnings; `exclude` strips the flagged values and
 * files; `include` keeps everything (the caller decided).
 * @module
 */
import { loadCommands } from '../extensions/commands.ts'
import { withoutMcpSecrets } from '../config/mcp-maps.ts'
import { readOpencodeConfig } from '../config/opencode-config-file.ts'
import { encodeWireFile, utf8OrNull, type WireFileOut } from '../../opencode/skill-bundle.ts'
import { readSkillFolder } from '../extensions/skill-folder.ts'
import { loadSkills } from '../extensions/skills.ts'
import { readServiceConfig } from '../config/workspace-config.ts'
import { listPortableFiles, portableOpencode } from './portable-layout.ts'
import { findSecrets, stripSecrets, textHasSecret } from './secret-scan.ts'
import { workspaceError } from '../workspace-errors.ts'

/** How the caller treats secrets. */
export type SensitiveMode = 'auto' | 'include' | 'exclude'

/** One secret finding. */
export interface ExportWarning {
  id: string
  label: string
  detail: string
}

/** The export document (without the envelope fields). */
export interface WorkspaceExport {
  opencode: Record<string, unknown>
  workspace: Record<string, unknown>
  /** Each skill's SKILL.md as `content` and every other file of its folder (text or base64, with executable bits). */
  skills: Array<{ name: string; description: string; content: string; files: WireFileOut[] }>
  commands: Array<{
    name: string
    description?: string
    template: string
    agent?: string
    model?: string
    subtask?: boolean
  }>
  files: Array<{ path: string; content: string }>
}

const SECTIONS: Array<{ key: string; id: string; label: string }> = [
  { key: 'mcp', id: 'mcp-config', label: 'MCP servers' },
  { key: 'plugin', id: 'plugin-config', label: 'Plugin settings' },
  { key: 'provider', id: 'provider-config', label: 'Model providers' },
]

/**
 * Builds the export, applying the sensitive mode. MCP header and environment values, OAuth
 * secrets and URL credentials are left out whatever the mode, unless `mcpSecrets` (the host asked
 * for them explicitly): they are credentials even where no pattern recognises them.
 */
export async function buildExport(
  root: string,
  mode: SensitiveMode,
  options: { mcpSecrets?: boolean } = {},
): Promise<WorkspaceExport> {
  const portable = portableOpencode((await readOpencodeConfig(root)).data)
  const opencode =
    options.mcpSecrets || !('mcp' in portable) ? portable : { ...portable, mcp: withoutMcpSecrets(portable.mcp) }
  let workspace = await readServiceConfig(root)
  let skills = await Promise.all(
    (await loadSkills(root)).map(async (s) => ({
      name: s.item.name,
      description: s.item.description,
      content: s.content,
      files: await readSkillFolder(root, s.item.name),
    })),
  )
  const commands = (await loadCommands(root)).map((c) => {
    const out: WorkspaceExport['commands'][number] = { name: c.name, template: c.template }
    if (c.description !== undefined) out.description = c.description
    if (c.agent !== undefined) out.agent = c.agent
    if (c.model !== null) out.model = c.model
    if (c.subtask !== undefined) out.subtask = c.subtask
    return out
  })
  let files = await listPortableFiles(root)
  const warnings: ExportWarning[] = []
  const flaggedKeys = new Set<string>()
  for (const section of SECTIONS) {
    const found = findSecrets(opencode[section.key])
    if (found.length) {
      flaggedKeys.add(section.key)
      warnings.push({
        id: section.id,
        label: section.label,
        detail: `Secret-looking values at ${found
          .map((p) => `${section.key}.${p}`)
          .slice(0, 10)
          .join(', ')}`,
      })
    }
  }
  const other = Object.keys(opencode)
    .filter((k) => !SECTIONS.some((s) => s.key === k))
    .flatMap((k) => findSecrets(opencode[k]).map((p) => `${k}.${p}`))
  if (other.length)
    warnings.push({
      id: 'opencode-config',
      label: 'Project config',
      detail: `Secret-looking values at ${other.slice(0, 10).join(', ')}`,
    })
  const workspaceSecrets = findSecrets(workspace)
  if (workspaceSecrets.length)
    warnings.push({
      id: 'workspace-config',
      label: 'Workspace settings',
      detail: `Secret-looking values at ${workspaceSecrets.slice(0, 10).join(', ')}`,
    })
  const flaggedFiles = new Set(files.filter((f) => textHasSecret(f.content)).map((f) => f.path))
  for (const path of flaggedFiles)
    warnings.push({
      id: `portable-file:${path}`,
      label: 'Portable file',
      detail: `${path} contains a literal credential`,
    })

  // Skills: SKILL.md and every text file of the folder are scanned; binary files are not text a
  // credential can be read from by the scan, and travel as they are.
  const flaggedSkillFiles = new Set<string>()
  for (const skill of skills) {
    if (textHasSecret(skill.content)) flaggedSkillFiles.add(`${skill.name}/SKILL.md`)
    for (const file of skill.files) {
      const text = utf8OrNull(file.bytes)
      if (text !== null && textHasSecret(text)) flaggedSkillFiles.add(`${skill.name}/${file.path}`)
    }
  }
  for (const path of flaggedSkillFiles)
    warnings.push({
      id: `skill-file:${path}`,
      label: 'Skill file',
      detail: `${path} contains a literal credential`,
    })

  if (mode === 'auto' && warnings.length) {
    throw workspaceError(
      'workspace_export_requires_decision',
      'The export contains secrets; choose sensitive=include or sensitive=exclude',
      { details: { warnings } },
    )
  }
  let exportedOpencode = opencode
  if (mode === 'exclude') {
    exportedOpencode = stripSecrets(opencode) ?? {}
    workspace = stripSecrets(workspace) ?? {}
    files = files.filter((f) => !flaggedFiles.has(f.path))
    // A flagged SKILL.md drops the skill (it cannot travel without it); a flagged file drops the file.
    skills = skills
      .filter((s) => !flaggedSkillFiles.has(`${s.name}/SKILL.md`))
      .map((s) => ({ ...s, files: s.files.filter((f) => !flaggedSkillFiles.has(`${s.name}/${f.path}`)) }))
  }
  return {
    opencode: exportedOpencode,
    workspace,
    skills: skills.map((s) => ({ ...s, files: s.files.map(encodeWireFile) })),
    commands,
    files,
  }
}
