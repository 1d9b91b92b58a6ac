/**
 * What a runtime installs for a config object: its normalized payload rendered into files in
 * OpenCode's project layout, plus the fragment of `opencode.json` it needs (MCP servers and
 * context instructions live in configuration, not in their own files). Pure: the same version
 * always renders the same bytes, so a runtime can compare before writing.
 * @module
 */
import type { ObjectType } from './config-source.ts'
import { renderMarkdown, type FrontmatterValue } from './frontmatter.ts'

/** One file a runtime writes, relative to the project root. */
export interface ResolvedFile {
  path: string
  content: string
}

/** Files and configuration for one version. */
export interface RenderedForm {
  files: ResolvedFile[]
  /** A fragment to merge into `opencode.json`, or null. */
  config: Record<string, unknown> | null
}

function fields(payload: Record<string, unknown>, omit: string[]): Record<string, FrontmatterValue> {
  return Object.fromEntries(Object.entries(payload).filter(([k, v]) => !omit.includes(k) && v !== undefined)) as Record<
    string,
    FrontmatterValue
  >
}

/**
 * Renders a version. A skill given as SKILL.md text installs that text unchanged (its author's
 * formatting is kept); everything else is rendered from the normalized payload.
 */
export function renderForm(
  type: ObjectType,
  payload: Record<string, unknown>,
  rawSourceText: string | null,
): RenderedForm {
  const name = String(payload.name ?? '')
  switch (type) {
    case 'skill': {
      const content =
        rawSourceText ??
        renderMarkdown(
          {
            name,
            description: payload.description as string,
            ...(payload.metadata as Record<string, FrontmatterValue> | undefined),
          },
          String(payload.body),
        )
      return { files: [{ path: `.opencode/skills/${name}/SKILL.md`, content }], config: null }
    }
    case 'command':
      return {
        files: [
          {
            path: `.opencode/commands/${name}.md`,
            content: renderMarkdown(fields(payload, ['name', 'template']), String(payload.template)),
          },
        ],
        config: null,
      }
    case 'agent':
      return {
        files: [
          {
            path: `.opencode/agents/${name}.md`,
            content: renderMarkdown(fields(payload, ['name', 'prompt']), String(payload.prompt)),
          },
        ],
        config: null,
      }
    case 'tool':
    case 'hook': {
      const dir = type === 'tool' ? 'tools' : 'plugins'
      const ext = payload.language === 'javascript' ? 'js' : 'ts'
      return { files: [{ path: `.opencode/${dir}/${name}.${ext}`, content: String(payload.source) }], config: null }
    }
    case 'context': {
      const path = `.opencode/context/${name}.md`
      const content = String(payload.content)
      return {
        files: [{ path, content: content.endsWith('\n') ? content : `${content}\n` }],
        config: { instructions: [path] },
      }
    }
    case 'mcp':
      return { files: [], config: { mcp: { [name]: payload.config } } }
    case 'custom':
      return { files: [], config: null }
  }
}
