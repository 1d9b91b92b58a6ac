/**
 * The MCP secrets of an `opencode.json(c)` text, masked or put back in the text itself.
 *
 * Why text: file reads, the sidecar's file and diff answers and search results hand out the file as
 * written (comments and formatting kept), not the parsed value; re-serialising would change what a
 * client sees and could not round-trip. So the mask is computed on the parsed value with the very
 * function `GET …/config` uses ({@link maskMcpEntry}), and each value it changes is replaced at its
 * place in the text. The reverse ({@link unmaskConfigText}) puts the stored values back where a
 * client wrote the mask, so saving a masked view never replaces a credential with `********`.
 * @module
 */
import type { Node } from 'jsonc-parser'
import { jsonDepthExceededAt } from '../core/json-depth.ts'
import { lazyModule } from '../core/lazy-module.ts'
import { MASK, maskMcpEntry, mcpEntries, unmaskMcpEntry } from './mcp-entries.ts'

const jsonc = lazyModule(() => import('jsonc-parser'))

/** File names whose content is OpenCode's project config. */
export function isOpencodeConfigPath(path: string): boolean {
  return /(^|[\\/])opencode\.jsonc?$/i.test(path)
}

type Leaf = { path: string[]; from: string; to: unknown }

/** The leaves of `before` that `after` changed (only the keys the MCP mask and unmask touch). */
function changedLeaves(before: Record<string, unknown>, after: Record<string, unknown>, base: string[]): Leaf[] {
  const out: Leaf[] = []
  for (const key of ['headers', 'environment', 'oauth'] as const) {
    const a = before[key]
    const b = after[key]
    if (!a || typeof a !== 'object' || !b || typeof b !== 'object') continue
    for (const [name, value] of Object.entries(a as Record<string, unknown>)) {
      const next = (b as Record<string, unknown>)[name]
      if (typeof value === 'string' && next !== value) out.push({ path: [...base, key, name], from: value, to: next })
    }
  }
  if (typeof before.url === 'string' && after.url !== before.url)
    out.push({ path: [...base, 'url'], from: before.url, to: after.url })
  return out
}

interface Parsed {
  text: string
  tree: Node | undefined
  value: Record<string, unknown> | null
}

async function parse(text: string): Promise<Parsed> {
  if (jsonDepthExceededAt(text) >= 0) return { text, tree: undefined, value: null }
  const { parseTree, getNodeValue } = await jsonc()
  const tree = parseTree(text, [], { allowTrailingComma: true, disallowComments: false })
  const value = tree ? (getNodeValue(tree) as unknown) : null
  return {
    text,
    tree,
    value: value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null,
  }
}

/** `text` with each leaf's string node replaced by its new value (JSON), formatting kept. */
async function replaceLeaves(parsed: Parsed, leaves: Leaf[]): Promise<string> {
  if (!parsed.tree || leaves.length === 0) return parsed.text
  const { findNodeAtLocation } = await jsonc()
  const edits: Array<{ offset: number; length: number; content: string }> = []
  for (const leaf of leaves) {
    const node = findNodeAtLocation(parsed.tree, leaf.path)
    if (node?.type === 'string')
      edits.push({ offset: node.offset, length: node.length, content: JSON.stringify(leaf.to) })
  }
  let out = parsed.text
  for (const edit of edits.sort((a, b) => b.offset - a.offset))
    out = out.slice(0, edit.offset) + edit.content + out.slice(edit.offset + edit.length)
  return out
}

/** Every `"key": "value"` string value on a line, as the mask of a line whose context is unknown. */
const STRING_MEMBER = /("(?:[^"\\]|\\.)*"\s*:\s*)"(?:[^"\\]|\\.)*"/g

/**
 * The config text as a principal below the owner may read it: every MCP header and environment
 * value, OAuth secret and URL credential reads as the mask, exactly as in `GET …/config`. A text
 * that does not parse as an object (being edited, say) has every string member value masked, since
 * where its secrets are cannot be told.
 */
export async function maskConfigText(text: string): Promise<string> {
  const parsed = await parse(text)
  if (!parsed.value) return text.replace(STRING_MEMBER, `$1"${MASK}"`)
  const leaves: Leaf[] = []
  for (const [name, entry] of Object.entries(mcpEntries(parsed.value)))
    leaves.push(...changedLeaves(entry, maskMcpEntry(entry), ['mcp', name]))
  return replaceLeaves(parsed, leaves)
}

/**
 * `incoming` (a config text a principal below the owner writes) with every masked value put back
 * from `stored` (the text on disk), the text-level twin of `unmaskMcpMap`: writing back a masked
 * read keeps the real credentials. Values the client really changed are kept as written.
 */
export async function unmaskConfigText(incoming: string, stored: string): Promise<string> {
  if (!incoming.includes(MASK)) return incoming
  const [next, current] = await Promise.all([parse(incoming), parse(stored)])
  if (!next.value || !current.value) return incoming
  const old = mcpEntries(current.value)
  const leaves: Leaf[] = []
  for (const [name, entry] of Object.entries(mcpEntries(next.value))) {
    if (old[name]) leaves.push(...changedLeaves(entry, unmaskMcpEntry(entry, old[name]), ['mcp', name]))
  }
  return replaceLeaves(next, leaves)
}

/** The secret strings of a config text as they are spelled inside its JSON quotes, with their masks. */
export async function configSecrets(text: string): Promise<Array<{ secret: string; mask: string }>> {
  const parsed = await parse(text)
  if (!parsed.value) return []
  const out: Array<{ secret: string; mask: string }> = []
  for (const [name, entry] of Object.entries(mcpEntries(parsed.value))) {
    for (const leaf of changedLeaves(entry, maskMcpEntry(entry), ['mcp', name]))
      if (leaf.from !== '') out.push({ secret: JSON.stringify(leaf.from).slice(1, -1), mask: String(leaf.to) })
  }
  // Longest first, so a secret that contains another is replaced whole.
  return out.sort((a, b) => b.secret.length - a.secret.length)
}

/** `text` with every occurrence of each secret replaced by its mask. */
export function maskSecretsIn(text: string, secrets: Array<{ secret: string; mask: string }>): string {
  let out = text
  for (const { secret, mask } of secrets) if (out.includes(secret)) out = out.split(secret).join(mask)
  return out
}

/**
 * A unified diff with the config's secrets masked: occurrences of the current secrets anywhere,
 * and in the sections of `opencode.json(c)` files every string value on a removed line (those may
 * be credentials the file no longer holds, whose place in the file cannot be told from a line).
 */
export function maskConfigDiff(
  diff: string,
  secrets: Array<{ secret: string; mask: string }>,
  /** The whole diff is of a config file (a per-file patch whose headers may be missing). */
  ofConfig = false,
): string {
  let header = false
  let inConfig = ofConfig
  const lines = maskSecretsIn(diff, secrets).split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.startsWith('diff --git ')) {
      header = isOpencodeConfigPath(line.split(' ').at(-1) ?? '')
      inConfig = header
    } else if (line.startsWith('--- ')) {
      // A file's section starts here (with or without a git header before it).
      inConfig = ofConfig || header || isOpencodeConfigPath(line.slice(4).trim().replace(/"$/, ''))
      header = false
    } else if (line.startsWith('+++ ')) {
      inConfig = inConfig || isOpencodeConfigPath(line.slice(4).trim())
    } else if (inConfig && line.startsWith('-')) lines[i] = line.replace(STRING_MEMBER, `$1"${MASK}"`)
  }
  return lines.join('\n')
}
