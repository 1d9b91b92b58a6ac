/**
 * Import preview: what an import payload would change, per section and mode, computed from the
 * files on disk and writing nothing. The fingerprint (sha256 over kind, action, path and the
 * digests of the content before and after) lets the import prove the preview the caller saw is
 * still what would happen; the content itself stays internal.
 * @module
 */
import { parseFrontmatter } from '../../opencode/frontmatter.ts'
import {
  type BundleFile,
  DEFAULT_SKILL_LIMITS,
  modeFor,
  type SkillLimits,
  type WireFileIn,
} from '../../opencode/skill-bundle.ts'
import { sha256Hex } from '../../core/sha256.ts'
import { loadCommands, prepareCommand, sanitizeCommandName } from '../extensions/commands.ts'
import { setTopLevelKeys } from '../config/jsonc-document.ts'
import { readOpencodeConfig } from '../config/opencode-config-file.ts'
import { readSkillFolder, skillDir } from '../extensions/skill-folder.ts'
import { loadSkills, prepareSkill } from '../extensions/skills.ts'
import { readServiceConfig } from '../config/workspace-config.ts'
import { commandFile, SERVICE_CONFIG_FILE, SKILLS_DIR } from '../config/workspace-layout.ts'
import { openForRead } from '../base/workspace-path.ts'
import { sameJson } from '../approvals/write-gate.ts'
import { listPortableFiles, PORTABLE_OPENCODE_KEYS, portablePath } from './portable-layout.ts'
import { workspaceError } from '../workspace-errors.ts'

/** Per-section mode. */
export type ImportMode = 'merge' | 'replace'

/** A validated import payload. */
export interface ImportPayload {
  mode?: {
    opencode?: ImportMode
    workspace?: ImportMode
    skills?: ImportMode
    commands?: ImportMode
    files?: ImportMode
  }
  opencode?: Record<string, unknown>
  workspace?: Record<string, unknown>
  /** With `files`, the skill's folder becomes SKILL.md plus exactly those files. */
  skills?: Array<{ name: string; content: string; description?: string; files?: WireFileIn[] }>
  commands?: Array<{
    name?: string
    template?: string
    content?: string
    description?: string
    agent?: string
    model?: string | null
    subtask?: boolean
  }>
  files?: Array<{ path: string; content: string }>
}

/** One planned change, with the internal content the apply step writes. */
export interface PlannedChange {
  /** `skill` is a SKILL.md (its delete removes the folder); `skill-file` any other file of a skill. */
  kind: 'opencode' | 'workspace' | 'skill' | 'skill-file' | 'command' | 'file'
  action: 'create' | 'update' | 'replace' | 'delete' | 'unchanged'
  label: string
  /** Workspace-relative path of the file (for a skill delete: its directory is removed). */
  path: string
  before: string | Uint8Array | null
  after: string | Uint8Array | null
  /** Permission bits the file is written with (skill files carry their executable flag). */
  mode?: number
}

/** What clients see. */
export interface ImportPreview {
  fingerprint: string
  summary: { total: number; create: number; update: number; replace: number; delete: number; unchanged: number }
  changes: Array<{ kind: PlannedChange['kind']; action: PlannedChange['action']; label: string; path: string }>
}

/**
 * The current text at `rel`, or null when nothing is there. Read without following a final symlink
 * and confirmed inside the workspace; anything there that is not a regular file (a directory above
 * all, which applying would replace) is refused rather than planned as a "create".
 */
async function textOrNull(root: string, rel: string): Promise<string | null> {
  const opened = await openForRead(root, rel)
  if (!opened) return null
  try {
    if (!(await opened.handle.stat()).isFile()) {
      throw workspaceError(
        'invalid_workspace_import_payload',
        `${rel} exists and is not a regular file; an import only writes files`,
      )
    }
    return await opened.handle.readFile('utf8')
  } finally {
    await opened.handle.close()
  }
}

function fileChange(
  kind: PlannedChange['kind'],
  label: string,
  path: string,
  before: string | null,
  after: string | null,
  replaceAction = false,
): PlannedChange {
  const action =
    after === null
      ? 'delete'
      : before === null
        ? 'create'
        : before === after
          ? 'unchanged'
          : replaceAction
            ? 'replace'
            : 'update'
  return { kind, action, label, path, before, after }
}

/** Skill file text: the payload content verbatim when it is already a valid skill file, else rebuilt. */
async function skillText(
  input: NonNullable<ImportPayload['skills']>[number],
  limits: SkillLimits,
): Promise<{ name: string; rel: string; text: string; files: BundleFile[] | null }> {
  const prepared = await prepareSkill(input, limits)
  const doc = await parseFrontmatter(input.content).catch(() => null)
  const verbatim =
    doc &&
    doc.data.name === prepared.name &&
    typeof doc.data.description === 'string' &&
    doc.data.description.trim() === prepared.description
  return {
    name: prepared.name,
    rel: prepared.rel,
    text: verbatim ? input.content : prepared.text,
    files: prepared.files,
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

/** File-level changes of one skill's other files: each file created, updated, unchanged or deleted. */
function skillFileChanges(name: string, before: BundleFile[], after: BundleFile[]): PlannedChange[] {
  const out: PlannedChange[] = []
  const old = new Map(before.map((f) => [f.path, f]))
  for (const file of after) {
    const was = old.get(file.path)
    old.delete(file.path)
    const action =
      was === undefined
        ? 'create'
        : sameBytes(was.bytes, file.bytes) && was.executable === file.executable
          ? 'unchanged'
          : 'update'
    out.push({
      kind: 'skill-file',
      action,
      label: `${name}/${file.path}`,
      path: `${skillDir(name)}/${file.path}`,
      before: was?.bytes ?? null,
      after: file.bytes,
      mode: modeFor(file.executable),
    })
  }
  for (const was of old.values())
    out.push({
      kind: 'skill-file',
      action: 'delete',
      label: `${name}/${was.path}`,
      path: `${skillDir(name)}/${was.path}`,
      before: was.bytes,
      after: null,
    })
  return out
}

async function commandText(
  input: NonNullable<ImportPayload['commands']>[number],
): Promise<{ name: string; rel: string; text: string }> {
  if (input.content !== undefined && input.template === undefined) {
    const doc = await parseFrontmatter(input.content).catch(() => {
      throw workspaceError('invalid_command', 'Command content frontmatter is not valid YAML')
    })
    const name = input.name ?? (typeof doc.data.name === 'string' ? doc.data.name : '')
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
    return prepareCommand({
      name,
      template: doc.body,
      description: input.description ?? str(doc.data.description),
      agent: str(doc.data.agent),
      model: str(doc.data.model),
      subtask: typeof doc.data.subtask === 'boolean' ? doc.data.subtask : undefined,
    })
  }
  return prepareCommand({
    name: input.name ?? '',
    template: input.template ?? '',
    description: input.description,
    agent: input.agent,
    model: input.model,
    subtask: input.subtask,
  })
}

/** Plans an import against the workspace as it is now. Throws 400 for invalid items. */
export async function planImport(
  root: string,
  payload: ImportPayload,
  limits: SkillLimits = DEFAULT_SKILL_LIMITS,
): Promise<PlannedChange[]> {
  const mode = payload.mode ?? {}
  const changes: PlannedChange[] = []

  if (payload.opencode) {
    const bad = Object.keys(payload.opencode).filter((k) => !(PORTABLE_OPENCODE_KEYS as readonly string[]).includes(k))
    if (bad.length)
      throw workspaceError('invalid_workspace_import_payload', `Not portable project config keys: ${bad.join(', ')}`)
    const current = await readOpencodeConfig(root)
    const updates: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(payload.opencode))
      if (!sameJson(current.data[key], value)) updates[key] = value
    if (mode.opencode === 'replace')
      for (const key of PORTABLE_OPENCODE_KEYS)
        if (key in current.data && !(key in payload.opencode)) updates[key] = null
    const after = Object.keys(updates).length ? await setTopLevelKeys(current.text, updates) : current.text
    changes.push(
      fileChange(
        'opencode',
        current.rel,
        current.rel,
        current.exists ? current.text : null,
        current.exists || Object.keys(updates).length ? after : null,
        mode.opencode === 'replace',
      ),
    )
    if (!current.exists && !Object.keys(updates).length) changes.pop()
  }

  if (payload.workspace) {
    const before = await textOrNull(root, SERVICE_CONFIG_FILE)
    const current = await readServiceConfig(root)
    const merged: Record<string, unknown> = mode.workspace === 'replace' ? {} : { ...current }
    for (const [key, value] of Object.entries(payload.workspace)) {
      if (value === null) delete merged[key]
      else merged[key] = value
    }
    const after = sameJson(current, merged) && before !== null ? before : JSON.stringify(merged, null, 2) + '\n'
    changes.push(
      fileChange('workspace', 'service.json', SERVICE_CONFIG_FILE, before, after, mode.workspace === 'replace'),
    )
  }

  if (payload.skills) {
    const incoming = new Set<string>()
    for (const skill of payload.skills) {
      const { name, rel, text, files } = await skillText(skill, limits)
      if (incoming.has(name)) throw workspaceError('invalid_workspace_import_payload', `Skill ${name} appears twice`)
      incoming.add(name)
      changes.push(fileChange('skill', name, rel, await textOrNull(root, rel), text))
      if (files) changes.push(...skillFileChanges(name, await readSkillFolder(root, name), files))
    }
    if (mode.skills === 'replace') {
      for (const { item, content } of await loadSkills(root)) {
        if (!incoming.has(item.name))
          changes.push(fileChange('skill', item.name, `${SKILLS_DIR}/${item.name}/SKILL.md`, content, null))
      }
    }
  }

  if (payload.commands) {
    const incoming = new Set<string>()
    for (const command of payload.commands) {
      const { name, rel, text } = await commandText(command)
      if (incoming.has(name)) throw workspaceError('invalid_workspace_import_payload', `Command ${name} appears twice`)
      incoming.add(name)
      changes.push(fileChange('command', name, rel, await textOrNull(root, rel), text))
    }
    if (mode.commands === 'replace') {
      for (const item of await loadCommands(root)) {
        const name = sanitizeCommandName(item.name)
        if (!incoming.has(name))
          changes.push(fileChange('command', name, commandFile(name), await textOrNull(root, commandFile(name)), null))
      }
    }
  }

  if (payload.files) {
    const incoming = new Set<string>()
    for (const file of payload.files) {
      const rel = portablePath(file.path)
      if (incoming.has(rel)) throw workspaceError('invalid_workspace_import_payload', `File ${rel} appears twice`)
      incoming.add(rel)
      changes.push(fileChange('file', rel, rel, await textOrNull(root, rel), file.content))
    }
    if (mode.files === 'replace') {
      for (const existing of await listPortableFiles(root)) {
        if (!incoming.has(existing.path))
          changes.push(fileChange('file', existing.path, existing.path, existing.content, null))
      }
    }
  }
  return changes
}

const digest = (data: string | Uint8Array | null) => (data === null ? null : sha256Hex(data))

/** The public preview of a plan. */
export function previewOf(changes: PlannedChange[]): ImportPreview {
  const summary = { total: changes.length, create: 0, update: 0, replace: 0, delete: 0, unchanged: 0 }
  for (const c of changes) summary[c.action]++
  const fingerprint = sha256Hex(
    JSON.stringify(changes.map((c) => [c.kind, c.action, c.path, digest(c.before), digest(c.after), c.mode ?? null])),
  )
  return {
    fingerprint,
    summary,
    changes: changes.map(({ kind, action, label, path }) => ({ kind, action, label, path })),
  }
}

/** "add N, update N, remove N" for approval and audit summaries. */
export function describeChanges(preview: ImportPreview): string {
  const { create, update, replace, delete: remove } = preview.summary
  const parts = [
    create && `add ${create}`,
    update + replace && `update ${update + replace}`,
    remove && `remove ${remove}`,
  ].filter(Boolean)
  return parts.length ? parts.join(', ') : 'no changes'
}
