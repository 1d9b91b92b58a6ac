/**
 * Markdown frontmatter as SKILL.md, command and agent files use it: a `---` fenced block of
 * `key: value` lines at the top, then the body. Values are the YAML subset those files use in
 * practice: plain or quoted strings, numbers, booleans, inline lists `[a, b]`, block lists
 * (`- item` lines) and one level of nested `key: value` maps. Anything else is reported with
 * its line, so a bad file is a 422 naming where it broke rather than a silent misread.
 * @module
 */

/** A frontmatter value. */
export type FrontmatterValue =
  | string
  | number
  | boolean
  | null
  | FrontmatterValue[]
  | { [key: string]: FrontmatterValue }

/** A parsed markdown file. */
export interface MarkdownDocument {
  /** Null when the file has no frontmatter block. */
  frontmatter: Record<string, FrontmatterValue> | null
  body: string
}

/** A frontmatter syntax error with its 1-based line. */
export class FrontmatterError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`)
    this.name = 'FrontmatterError'
  }
}

function scalar(text: string, line: number): FrontmatterValue {
  const value = text.trim()
  if (value === '' || value === '~' || value === 'null') return null
  if (value === 'true') return true
  if (value === 'false') return false
  if (/^-?\d+(\.\d+)?$/.test(value)) return Number(value)
  if (value.startsWith('"')) {
    if (!value.endsWith('"') || value.length < 2) throw new FrontmatterError(line, 'unterminated double-quoted string')
    try {
      return JSON.parse(value) as string
    } catch {
      throw new FrontmatterError(line, 'invalid escape in double-quoted string')
    }
  }
  if (value.startsWith("'")) {
    if (!value.endsWith("'") || value.length < 2) throw new FrontmatterError(line, 'unterminated single-quoted string')
    return value.slice(1, -1).replace(/''/g, "'")
  }
  if (value.startsWith('[')) {
    if (!value.endsWith(']')) throw new FrontmatterError(line, 'unterminated inline list')
    const inner = value.slice(1, -1).trim()
    return inner === '' ? [] : inner.split(',').map((item) => scalar(item, line))
  }
  if (value.startsWith('{')) throw new FrontmatterError(line, 'inline maps are not supported; use one key per line')
  return value
}

function parseBlock(lines: string[], firstLine: number): Record<string, FrontmatterValue> {
  const out: Record<string, FrontmatterValue> = {}
  let current: { key: string; indent: number; kind: 'list' | 'map' | 'unknown' } | null = null
  lines.forEach((raw, i) => {
    const line = firstLine + i
    if (raw.trim() === '' || raw.trim().startsWith('#')) return
    const indent = raw.length - raw.trimStart().length
    const text = raw.trim()
    // YAML also allows a block list at the key's own indentation (`tools:` then `- read`).
    const unindentedItem =
      indent === 0 && (text.startsWith('- ') || text === '-') && current !== null && current.kind !== 'map'
    if (indent > 0 || unindentedItem) {
      if (!current) throw new FrontmatterError(line, 'indented line without a parent key')
      if (text.startsWith('- ') || text === '-') {
        if (current.kind === 'map') throw new FrontmatterError(line, 'list item inside a map')
        if (current.kind === 'unknown') out[current.key] = []
        current.kind = 'list'
        ;(out[current.key] as FrontmatterValue[]).push(scalar(text.slice(1), line))
        return
      }
      const match = /^([A-Za-z0-9_.-]+):(?:\s+(.*))?$/.exec(text)
      if (!match || current.kind === 'list') throw new FrontmatterError(line, 'expected "- item" or "key: value"')
      if (current.kind === 'unknown') {
        current.kind = 'map'
        out[current.key] = {}
      }
      ;(out[current.key] as Record<string, FrontmatterValue>)[match[1]!] = scalar(match[2] ?? '', line)
      return
    }
    const match = /^([A-Za-z0-9_.-]+):(?:\s+(.*)|\s*)$/.exec(text)
    if (!match) throw new FrontmatterError(line, 'expected "key: value"')
    const key = match[1]!
    if (Object.hasOwn(out, key)) throw new FrontmatterError(line, `duplicate key "${key}"`)
    const rest = (match[2] ?? '').trim()
    if (rest === '' || rest === '|' || rest === '>') {
      if (rest === '|' || rest === '>')
        throw new FrontmatterError(line, 'block scalars (| and >) are not supported; quote the value on one line')
      out[key] = null
      current = { key, indent, kind: 'unknown' }
      return
    }
    out[key] = scalar(rest, line)
    current = null
  })
  return out
}

/** Splits a markdown file into frontmatter (when it opens with `---`) and body. */
export function parseMarkdown(text: string): MarkdownDocument {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n')
  if (!normalized.startsWith('---\n') && normalized !== '---') return { frontmatter: null, body: normalized }
  const lines = normalized.split('\n')
  const end = lines.indexOf('---', 1)
  if (end < 0) throw new FrontmatterError(1, 'frontmatter opened with --- is never closed')
  const frontmatter = parseBlock(lines.slice(1, end), 2)
  return {
    frontmatter,
    body: lines
      .slice(end + 1)
      .join('\n')
      .replace(/^\n+/, ''),
  }
}

function renderScalar(value: FrontmatterValue): string {
  if (value === null) return 'null'
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (typeof value === 'string') {
    return /^[A-Za-z0-9][A-Za-z0-9 _./@()-]*$/.test(value) &&
      !/^(true|false|null|-?\d+(\.\d+)?)$/.test(value) &&
      !value.endsWith(' ')
      ? value
      : JSON.stringify(value)
  }
  return JSON.stringify(value)
}

/** Renders frontmatter and body back into a markdown file (inverse of {@link parseMarkdown}). */
export function renderMarkdown(frontmatter: Record<string, FrontmatterValue | undefined>, body: string): string {
  const lines: string[] = []
  for (const [key, value] of Object.entries(frontmatter)) {
    if (value === undefined) continue
    if (Array.isArray(value)) {
      lines.push(`${key}:`)
      for (const item of value) lines.push(`  - ${renderScalar(item)}`)
    } else if (value !== null && typeof value === 'object') {
      lines.push(`${key}:`)
      for (const [k, v] of Object.entries(value)) lines.push(`  ${k}: ${renderScalar(v)}`)
    } else {
      lines.push(`${key}: ${renderScalar(value)}`)
    }
  }
  const text = body.endsWith('\n') ? body : `${body}\n`
  return lines.length > 0 ? `---\n${lines.join('\n')}\n---\n\n${text}` : text
}
