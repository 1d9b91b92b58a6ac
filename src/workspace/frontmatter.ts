/**
 * Markdown files with YAML frontmatter (skills and commands): split into data and body, and
 * join back. Invalid YAML is reported, not guessed at.
 * @module
 */
import { parse, stringify } from 'yaml'

/** A parsed markdown document. */
export interface MarkdownDoc {
  data: Record<string, unknown>
  body: string
  hasFrontmatter: boolean
}

const FENCE = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

/** Splits frontmatter from the body; throws when the frontmatter is not a YAML mapping. */
export function splitFrontmatter(text: string): MarkdownDoc {
  const match = FENCE.exec(text.replace(/^\uFEFF/, ''))
  if (!match) return { data: {}, body: text, hasFrontmatter: false }
  const data = match[1]!.trim() === '' ? {} : parse(match[1]!)
  if (data !== null && (typeof data !== 'object' || Array.isArray(data))) throw new Error('frontmatter must be a YAML mapping')
  return { data: (data ?? {}) as Record<string, unknown>, body: text.replace(/^\uFEFF/, '').slice(match[0].length), hasFrontmatter: true }
}

/** Builds `---\n<yaml>---\n\n<body>\n`; keys whose value is undefined or null are left out. */
export function joinFrontmatter(data: Record<string, unknown>, body: string): string {
  const clean = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined && v !== null))
  const yaml = Object.keys(clean).length ? stringify(clean, { lineWidth: 0 }) : ''
  const trimmed = body.replace(/^\s*\n/, '').trimEnd()
  return `---\n${yaml}---\n${trimmed ? `\n${trimmed}\n` : ''}`
}
