/**
 * What a runtime installs for a config object: its normalized payload rendered into files in
 * OpenCode's project layout, plus the fragment of `opencode.json` it needs (MCP servers and
 * context instructions live in configuration, not in their own files). Pure: the same version
 * always renders the same bytes, so a runtime can compare before writing.
 * @module
 */
import { renderFrontmatter } from '../../opencode/frontmatter.ts'
import { sha256Hex } from '../../core/sha256.ts'
import { fromStored, type StoredFile, utf8OrNull } from '../../opencode/skill-bundle.ts'
import type { ObjectType } from './config-source.ts'

/**
 * One file a runtime writes, relative to the project root: `content` is the text when `encoding`
 * is `utf8`, or the bytes in base64 when it is `base64`; `executable` means mode 0755.
 */
export interface ResolvedFile {
  path: string
  content: string
  encoding: 'utf8' | 'base64'
  executable: boolean
  sha256: string
}

function textFile(path: string, content: string): ResolvedFile {
  return { path, content, encoding: 'utf8', executable: false, sha256: sha256Hex(content) }
}

/** Files and configuration for one version. */
export interface RenderedForm {
  files: ResolvedFile[]
  /** A fragment to merge into `opencode.json`, or null. */
  config: Record<string, unknown> | null
}

function fields(payload: Record<string, unknown>, omit: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([k, v]) => !omit.includes(k) && v !== undefined))
}

/**
 * Renders a version. A skill given as SKILL.md text installs that text unchanged (its author's
 * formatting is kept), followed by every other file of its folder in path order (text as UTF-8,
 * anything else as base64, with the executable flag); everything else is rendered from the
 * normalized payload.
 */
export async function renderForm(
  type: ObjectType,
  payload: Record<string, unknown>,
  rawSourceText: string | null,
  storedFiles: string | null = null,
): Promise<RenderedForm> {
  const name = String(payload.name ?? '')
  switch (type) {
    case 'skill': {
      const content =
        rawSourceText ??
        (await renderFrontmatter(
          {
            name,
            description: payload.description as string,
            // Metadata given in a normalized payload may repeat these keys; the payload's own win.
            ...fields((payload.metadata as Record<string, unknown> | undefined) ?? {}, ['name', 'description']),
          },
          String(payload.body),
        ))
      const dir = `.opencode/skills/${name}`
      const others = storedFiles ? fromStored(JSON.parse(storedFiles) as StoredFile[]) : []
      return {
        files: [
          textFile(`${dir}/SKILL.md`, content),
          ...others.map((file): ResolvedFile => {
            const text = utf8OrNull(file.bytes)
            return {
              path: `${dir}/${file.path}`,
              content: text ?? Buffer.from(file.bytes).toString('base64'),
              encoding: text === null ? 'base64' : 'utf8',
              executable: file.executable,
              sha256: sha256Hex(file.bytes),
            }
          }),
        ],
        config: null,
      }
    }
    case 'command':
      return {
        files: [
          textFile(
            `.opencode/commands/${name}.md`,
            await renderFrontmatter(fields(payload, ['name', 'template']), String(payload.template)),
          ),
        ],
        config: null,
      }
    case 'agent':
      return {
        files: [
          textFile(
            `.opencode/agents/${name}.md`,
            await renderFrontmatter(fields(payload, ['name', 'prompt']), String(payload.prompt)),
          ),
        ],
        config: null,
      }
    case 'tool':
    case 'hook': {
      const dir = type === 'tool' ? 'tools' : 'plugins'
      const ext = payload.language === 'javascript' ? 'js' : 'ts'
      return { files: [textFile(`.opencode/${dir}/${name}.${ext}`, String(payload.source))], config: null }
    }
    case 'context': {
      const path = `.opencode/context/${name}.md`
      const content = String(payload.content)
      return {
        files: [textFile(path, content.endsWith('\n') ? content : `${content}\n`)],
        config: { instructions: [path] },
      }
    }
    case 'mcp':
      return { files: [], config: { mcp: { [name]: payload.config } } }
    case 'custom':
      return { files: [], config: null }
  }
}
