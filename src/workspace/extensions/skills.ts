/**
 * Skills: `.opencode/skills/<name>/SKILL.md` with YAML frontmatter (`name`, `description`).
 * Entries whose frontmatter is invalid, whose name differs from the directory, or whose
 * description is missing are left out of the list, as OpenCode would not load them either.
 * @module
 */
import { join } from 'node:path'
import { parseFrontmatter, renderFrontmatter } from '../../opencode/frontmatter.ts'
import { isSkillDescription, isSkillName } from '../../opencode/names.ts'
import {
  type BundleFile,
  DEFAULT_SKILL_LIMITS,
  decodeWireFiles,
  type SkillLimits,
  type WireFileIn,
} from '../../opencode/skill-bundle.ts'
import { writeContained } from '../base/atomic-write.ts'
import { readContainedText, removeContained, resolveExisting } from '../base/workspace-path.ts'
import { replaceSkillFolder } from './skill-folder.ts'
import { SKILLS_DIR, skillDirNames, skillFile } from '../config/workspace-layout.ts'
import { workspaceError } from '../workspace-errors.ts'

/** One listed skill. */
export interface SkillItem {
  name: string
  /** Absolute path of the SKILL.md file. */
  path: string
  description: string
  scope: 'project'
  trigger?: string
}

/** Throws 400 `invalid_skill_name` unless `name` is valid. */
export function validateSkillName(name: string): string {
  if (!isSkillName(name)) {
    throw workspaceError(
      'invalid_skill_name',
      'Skill name must be 1-64 lowercase letters or digits, words joined by single hyphens',
    )
  }
  return name
}

const validDescription = isSkillDescription

/**
 * The skill limits of this server: the `skills` key of the server config file
 * (`{maxFiles, maxFileBytes, maxBytes}`), each falling back to the defaults (200 files, 5 MiB per
 * file, 20 MiB per skill).
 */
export function skillLimitsOf(file: { skills?: Partial<SkillLimits> } | undefined): SkillLimits {
  return { ...DEFAULT_SKILL_LIMITS, ...file?.skills }
}

async function itemFrom(root: string, dir: string, text: string): Promise<SkillItem | null> {
  let doc
  try {
    doc = await parseFrontmatter(text)
  } catch {
    return null
  }
  const name = doc.data.name === undefined ? dir : doc.data.name
  if (!isSkillName(name) || name !== dir) return null
  if (!validDescription(doc.data.description)) return null
  const item: SkillItem = {
    name,
    path: join(root, skillFile(name)),
    description: doc.data.description.trim(),
    scope: 'project',
  }
  const trigger = doc.data.trigger ?? doc.data.when
  if (typeof trigger === 'string' && trigger.trim()) item.trigger = trigger.trim()
  return item
}

/**
 * Lists the workspace's valid skills, sorted by name, with their file contents. A skills folder
 * that resolves outside the workspace is refused (400 `invalid_path`); a skill file that does is
 * left out, like any unreadable one. Nothing outside is read.
 */
export async function loadSkills(root: string): Promise<Array<{ item: SkillItem; content: string }>> {
  await resolveExisting(root, SKILLS_DIR)
  const found = await Promise.all(
    skillDirNames(root).map(async (dir) => {
      let text: string | null
      try {
        text = await readContainedText(root, skillFile(dir))
      } catch {
        return null
      }
      if (text === null) return null
      const item = await itemFrom(root, dir, text)
      return item ? { item, content: text } : null
    }),
  )
  return found.filter((x): x is { item: SkillItem; content: string } => x !== null)
}

/** A validated skill ready to write. */
export interface PreparedSkill {
  name: string
  description: string
  rel: string
  text: string
  /** The folder's other files when the payload carried `files` (the folder is then replaced); else null. */
  files: BundleFile[] | null
}

/**
 * Validates a skill payload and builds the file: frontmatter `name` must equal the payload name,
 * the description comes from the frontmatter or the payload (1–1024 characters, else 422), and
 * other frontmatter keys are kept.
 */
export async function prepareSkill(
  input: { name: string; content: string; description?: string; files?: WireFileIn[] },
  limits: SkillLimits = DEFAULT_SKILL_LIMITS,
): Promise<PreparedSkill> {
  const name = validateSkillName(input.name)
  if (!input.content.trim()) throw workspaceError('invalid_skill_content', 'Skill content must not be empty')
  let doc
  try {
    doc = await parseFrontmatter(input.content)
  } catch (error) {
    throw workspaceError(
      'invalid_skill_content',
      `Skill frontmatter is not valid YAML: ${(error as Error).message.split('\n')[0]}`,
    )
  }
  if (doc.data.name !== undefined && doc.data.name !== name)
    throw workspaceError('invalid_skill_name', 'Skill frontmatter name must match payload name')
  const description = typeof doc.data.description === 'string' ? doc.data.description : input.description
  if (!validDescription(description))
    throw workspaceError('invalid_description', 'Skill description must be 1-1024 characters')
  const { name: _n, description: _d, ...rest } = doc.data
  const text = await renderFrontmatter({ name, description: description.trim(), ...rest }, doc.body)
  return {
    name,
    description: description.trim(),
    rel: skillFile(name),
    text,
    files: input.files ? decodeWireFiles(Buffer.byteLength(text), input.files, limits) : null,
  }
}

/**
 * Writes a prepared skill; 400 `invalid_path` when its folder resolves outside the workspace.
 * With files the whole folder is replaced atomically; without, only SKILL.md is written and the
 * folder's other files stay.
 */
export async function writeSkill(root: string, skill: PreparedSkill): Promise<void> {
  if (skill.files) await replaceSkillFolder(root, skill.name, skill.text, skill.files)
  else await writeContained(root, skill.rel, skill.text)
}

/**
 * Removes a skill's directory through its pinned parent: 400 `invalid_path` when the skills
 * folder resolves outside the workspace; a skill folder that is a symlink loses only the link.
 */
export async function deleteSkill(root: string, name: string): Promise<void> {
  await removeContained(root, `${SKILLS_DIR}/${validateSkillName(name)}`, { recursive: true })
}
