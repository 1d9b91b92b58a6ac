/**
 * Commands: `.opencode/commands/<name>.md` with frontmatter (`description`, `agent`, `model`,
 * `subtask`) and the prompt template as the body. A null model is never written.
 * @module
 */
import { writeContained } from '../base/atomic-write.ts'
import { readContainedText, removeContained, resolveExisting } from '../base/workspace-path.ts'
import { parseFrontmatter, renderFrontmatter } from '../../opencode/frontmatter.ts'
import { COMMAND_NAME_RULE, isCommandName } from '../../opencode/names.ts'
import { COMMANDS_DIR, commandFile, commandFileNames } from '../config/workspace-layout.ts'
import { workspaceError } from '../workspace-errors.ts'

/** One listed command. */
export interface CommandItem {
  name: string
  description?: string
  template: string
  agent?: string
  model: string | null
  subtask?: boolean
  scope: 'workspace'
}

/** Trims and strips a leading `/`; 400 `invalid_command_name` unless valid. */
export function sanitizeCommandName(raw: string): string {
  const name = raw.trim().replace(/^\/+/, '')
  if (!isCommandName(name)) throw workspaceError('invalid_command_name', COMMAND_NAME_RULE)
  return name
}

async function itemFrom(file: string, text: string): Promise<CommandItem | null> {
  let doc
  try {
    doc = await parseFrontmatter(text)
  } catch {
    return null
  }
  const stem = file.replace(/\.md$/, '')
  // The file name is the command's identity (OpenCode invokes /<stem>), so DELETE by name finds it.
  const name = stem
  if (!isCommandName(name)) return null
  const item: CommandItem = {
    name,
    template: doc.body.trim(),
    model: typeof doc.data.model === 'string' ? doc.data.model : null,
    scope: 'workspace',
  }
  if (typeof doc.data.description === 'string') item.description = doc.data.description
  if (typeof doc.data.agent === 'string') item.agent = doc.data.agent
  if (typeof doc.data.subtask === 'boolean') item.subtask = doc.data.subtask
  return item
}

/**
 * Lists the workspace's commands, sorted by file name. A commands folder that resolves outside
 * the workspace is refused (400 `invalid_path`); nothing outside is read.
 */
export async function loadCommands(root: string): Promise<CommandItem[]> {
  await resolveExisting(root, COMMANDS_DIR)
  const items = await Promise.all(
    commandFileNames(root).map(async (file) => {
      try {
        const text = await readContainedText(root, `${COMMANDS_DIR}/${file}`)
        return text === null ? null : await itemFrom(file, text)
      } catch {
        return null
      }
    }),
  )
  return items.filter((x): x is CommandItem => x !== null)
}

/** A command payload. */
export interface CommandInput {
  name: string
  template: string
  description?: string
  agent?: string
  model?: string | null
  subtask?: boolean
}

/** Validates a payload and builds the file text. */
export async function prepareCommand(input: CommandInput): Promise<{ name: string; rel: string; text: string }> {
  const name = sanitizeCommandName(input.name)
  if (!input.template.trim()) throw workspaceError('invalid_command_template', 'Command template must not be empty')
  const text = await renderFrontmatter(
    { description: input.description, agent: input.agent, model: input.model ?? undefined, subtask: input.subtask },
    input.template.trim(),
  )
  return { name, rel: commandFile(name), text }
}

/** Writes a prepared command; 400 `invalid_path` when its folder resolves outside the workspace. */
export async function writeCommand(root: string, command: { rel: string; text: string }): Promise<void> {
  await writeContained(root, command.rel, command.text)
}

/** Removes a command file through its pinned parent (400 `invalid_path` when that resolves outside). */
export async function deleteCommand(root: string, name: string): Promise<void> {
  await removeContained(root, commandFile(sanitizeCommandName(name)))
}
