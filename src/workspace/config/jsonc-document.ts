/**
 * JSONC config files: parsing as OpenCode reads them (`parseJsonc`, with precise error offsets),
 * and edits that keep the file's comments and formatting (text edits through jsonc-parser, not a
 * re-serialisation).
 * @module
 */
import type { FormattingOptions } from 'jsonc-parser'
import { lazyModule } from '../../core/lazy-module.ts'
import { parseJsonc } from '../../opencode/opencode-config.ts'
import { workspaceError } from '../workspace-errors.ts'

const jsonc = lazyModule(() => import('jsonc-parser'))

/** Parses JSONC text into an object; 422 `invalid_jsonc` with `[{code, offset, length}]` otherwise. */
export async function parseJsoncObject(text: string, file: string): Promise<Record<string, unknown>> {
  const { value, problems } = await parseJsonc(text)
  if (problems.length > 0) throw workspaceError('invalid_jsonc', `Failed to parse ${file}`, { details: problems })
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw workspaceError('invalid_jsonc', `${file} must contain a JSON object`, {
      details: [{ code: 'NotAnObject', offset: 0, length: text.length }],
    })
  }
  return value as Record<string, unknown>
}

/** Indentation and line endings as the file already uses them. */
export function detectFormatting(text: string): FormattingOptions {
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  const indented = /\n([ \t]+)\S/.exec(text)?.[1]
  if (indented?.startsWith('\t')) return { insertSpaces: false, tabSize: 1, eol }
  return { insertSpaces: true, tabSize: indented ? Math.min(indented.length, 8) : 2, eol }
}

/**
 * Replaces top-level keys in JSONC text; `null` removes a key. Everything else in the file
 * (comments, other keys, their order and formatting) is left exactly as it was.
 */
export async function setTopLevelKeys(text: string, updates: Record<string, unknown>): Promise<string> {
  const { applyEdits, modify } = await jsonc()
  let out = text.trim() === '' ? '{\n}\n' : text
  const formattingOptions = detectFormatting(out)
  for (const [key, value] of Object.entries(updates)) {
    const edits = modify(out, [key], value === null ? undefined : value, { formattingOptions })
    out = applyEdits(out, edits)
  }
  return out.endsWith('\n') ? out : out + (formattingOptions.eol ?? '\n')
}

/** Sets (or with `undefined`, removes) the value at a nested path, keeping the rest of the text. */
export async function setJsoncPath(text: string, path: Array<string | number>, value: unknown): Promise<string> {
  const { applyEdits, modify } = await jsonc()
  const base = text.trim() === '' ? '{\n}\n' : text
  const formattingOptions = detectFormatting(base)
  const out = applyEdits(base, modify(base, path, value, { formattingOptions }))
  return out.endsWith('\n') ? out : out + (formattingOptions.eol ?? '\n')
}
