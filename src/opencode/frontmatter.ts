/**
 * Markdown with YAML frontmatter, as OpenCode reads SKILL.md, command and agent files: a `---`
 * fenced block at the top holding a YAML mapping, then the body. Both surfaces parse with this one
 * function, so a file the workspace server accepts (block scalars `|` and `>`, nested maps, flow
 * lists) is accepted by the control plane too, and a broken file is reported with the line it
 * broke on instead of being guessed at.
 * @module
 */
import { lazyModule } from '../core/lazy-module.ts'

const yaml = lazyModule(() => import('yaml'))

/** Alias expansions (weighted by what each alias holds) a frontmatter block may use. */
const MAX_ALIAS_COUNT = 100

/** A stack overflow (flow collections nested thousands deep) as a syntax error; anything else as is. */
function tooDeep(error: unknown): unknown {
  return error instanceof RangeError ? new FrontmatterError(2, 'frontmatter nests too deep') : error
}

/** A parsed markdown document. */
export interface MarkdownDoc {
  /** The frontmatter mapping; `{}` when the file has none. */
  data: Record<string, unknown>
  /** Everything after the closing fence, with the blank lines that separate it removed. */
  body: string
  hasFrontmatter: boolean
}

/** A frontmatter syntax error with its 1-based line in the whole file. */
export class FrontmatterError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`)
    this.name = 'FrontmatterError'
  }
}

/**
 * Splits frontmatter from the body and parses it as YAML 1.2 (duplicate keys are errors, aliases
 * are capped by the parser so a small file cannot expand into a huge value). Throws
 * {@link FrontmatterError} when the fence is never closed, the YAML is invalid or is not a mapping.
 */
export async function parseFrontmatter(text: string): Promise<MarkdownDoc> {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n')
  if (!normalized.startsWith('---\n') && normalized.trimEnd() !== '---')
    return { data: {}, body: normalized, hasFrontmatter: false }
  const lines = normalized.split('\n')
  let end = -1
  for (let i = 1; i < lines.length; i++) {
    if (/^---[ \t]*$/.test(lines[i]!)) {
      end = i
      break
    }
  }
  if (end < 0) throw new FrontmatterError(1, 'frontmatter opened with --- is never closed')
  const source = lines.slice(1, end).join('\n')
  const body = lines
    .slice(end + 1)
    .join('\n')
    .replace(/^\n+/, '')
  if (source.trim() === '') return { data: {}, body, hasFrontmatter: true }
  const { parseDocument } = await yaml()
  let doc: ReturnType<typeof parseDocument>
  try {
    doc = parseDocument(source, { prettyErrors: false })
  } catch (error) {
    throw tooDeep(error)
  }
  const first = doc.errors[0]
  if (first) {
    // The YAML parser counts from the first line inside the fence; report lines of the file.
    const line = (first.linePos?.[0]?.line ?? 1) + 1
    throw new FrontmatterError(line, first.message.split('\n')[0]!)
  }
  let data: unknown
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })
  } catch (error) {
    // The parser's guard against alias expansion bombs ("billion laughs") throws a ReferenceError.
    if (error instanceof ReferenceError)
      throw new FrontmatterError(2, `aliases expand past the limit of ${MAX_ALIAS_COUNT} (an alias bomb?)`)
    throw tooDeep(error)
  }
  if (data === null || data === undefined) return { data: {}, body, hasFrontmatter: true }
  if (typeof data !== 'object' || Array.isArray(data))
    throw new FrontmatterError(2, 'frontmatter must be a YAML mapping of key: value lines')
  return { data: data as Record<string, unknown>, body, hasFrontmatter: true }
}

/**
 * Builds `---\n<yaml>---\n\n<body>\n`; keys whose value is undefined or null are left out (a
 * document without keys keeps the empty fence, so it still reads as a frontmatter file).
 * Deterministic: the same input renders the same bytes, which the control plane's resolved form
 * relies on.
 */
export async function renderFrontmatter(data: Record<string, unknown>, body: string): Promise<string> {
  const clean = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined && v !== null))
  const trimmed = body.replace(/^\s*\n/, '').trimEnd()
  const text = Object.keys(clean).length ? (await yaml()).stringify(clean, { lineWidth: 0 }) : ''
  return `---\n${text}---\n${trimmed ? `\n${trimmed}\n` : ''}`
}
