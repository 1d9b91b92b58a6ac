/**
 * Markdown files with YAML frontmatter (skills and commands): split into data and body, and
 * join back. Invalid YAML is reported, not guessed at.
 * @module
 */
import { lazyModule } from '../core/lazy-module.ts'

const yaml = lazyModule(() => import('yaml'))

/** A parsed markdown document. */
export interface MarkdownDoc {
  data: Record<string, unknown>
  body: string
  hasFrontmatter: boolean
}

const FENCE = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

/** Splits frontmatter from the body; throws when the frontmatter is not a YAML mapping. */
export async function splitFrontmatter(text: string): Promise<MarkdownDoc> {
  const match = FENCE.exec(text.replace(/^\uFEFF/, ''))
  if (!match) return { data: {}, body: text, hasFrontmatter: false }
  const data = match[1]!.trim() === '' ? {} : (await yaml()).parse(match[1]!)
  if (data !== null && (typeof data !== 'object' || Array.isArray(data)))
    throw new Error('frontmatter must be a YAML mapping')
  return {
    data: (data ?? {}) as Record<string, unknown>,
    body: text.replace(/^\uFEFF/, '').slice(match[0].length),
    hasFrontmatter: true,
  }
}

/** Builds `---\n<yaml>---\n\n<body>\n`; keys whose value is undefined or null are left out. */
export async function joinFrontmatter(data: Record<string, unknown>, body: string): Promise<string> {
  const clean = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined && v !== null))
  const text = Object.keys(clean).length ? (await yaml()).stringify(clean, { lineWidth: 0 }) : ''
  const trimmed = body.replace(/^\s*\n/, '').trimEnd()
  return `---\n${text}---\n${trimmed ? `\n${trimmed}\n` : ''}`
}
