/**
 * Reads a `GET /v1/me/delivery` answer into what the workspace should hold: files at
 * workspace-relative paths inside the delivery area, and MCP entries for the project config.
 *
 * The control plane is not trusted with the disk: an item is refused (listed in `rejected`,
 * nothing of it written) when its name breaks OpenCode's naming rule, a file path leaves the
 * item's home (checked as for imports: `normalizeSkillPath` and then `normalizeRelPath`), a
 * declared size or sha256 does not match the content, or it breaks the `skills` limits of this
 * server. Files land only under `.opencode/skills/<name>/` and, one file each, in
 * `.opencode/commands/`, `.opencode/agents/`, `.opencode/context/` (`.md`), `.opencode/tools/` and
 * `.opencode/plugins/` (`.ts`/`.js`); config fragments may carry only `mcp` entries that pass
 * OpenCode's MCP rule (mcp items) and `instructions` naming the item's own file (context items).
 * Anything else is refused the same way; `custom` objects install nothing and are left out.
 * @module
 */
import { Buffer } from 'node:buffer'
import { createSha256 } from '../../core/sha256.ts'
import { checkMcpServer, isMcpName } from '../../opencode/mcp-entries.ts'
import { isSkillName } from '../../opencode/names.ts'
import { normalizeSkillPath, type SkillLimits } from '../../opencode/skill-bundle.ts'
import { COMMANDS_DIR, PLUGINS_DIR, SKILLS_DIR } from '../config/workspace-layout.ts'
import { normalizeRelPath } from '../base/workspace-path.ts'

/** Where agents live (OpenCode reads `.opencode/agents/*.md`). */
export const AGENTS_DIR = '.opencode/agents'
/** Where context documents live; the project config's `instructions` lists them. */
export const CONTEXT_DIR = '.opencode/context'

/** One file the workspace should hold. */
export interface DeliveredFile {
  /** Workspace-relative path. */
  rel: string
  bytes: Uint8Array
  executable: boolean
  sha256: string
}

/** One delivered item, validated. */
export interface DeliveredItem {
  objectId: string
  type: string
  name: string
  versionId: string
  digest: string
  /** For a skill, its folder (`.opencode/skills/<name>`); conflicts with a local skill are per folder. */
  folder: string | null
  files: DeliveredFile[]
  /** MCP entries by name (from the item's `config.mcp`). */
  mcp: Record<string, Record<string, unknown>>
  /** Paths the project config's `instructions` must list (a context item's own file). */
  instructions: string[]
  /** Model providers by name (`llm_provider` items, in a Worker's own set only). */
  provider: Record<string, Record<string, unknown>>
  /** True when only the paths were read (the item is unchanged since it was last applied). */
  contentSkipped: boolean
}

/** The validated set. */
export interface DeliveredSet {
  digest: string
  organization: { id: string; name: string }
  principal: Record<string, unknown>
  items: DeliveredItem[]
  /** Items refused, with why (nothing of them is written, and nothing of them is removed either). */
  rejected: Array<{ objectId: string; name: string; reason: string }>
}

/** Most items one set may carry. */
export const MAX_ITEMS = 10_000

/** Where one-file items live, and the extensions their file may have. */
const HOME: Record<string, { dir: string; ext: RegExp; label: string } | undefined> = {
  command: { dir: COMMANDS_DIR, ext: /\.md$/, label: '.md' },
  agent: { dir: AGENTS_DIR, ext: /\.md$/, label: '.md' },
  context: { dir: CONTEXT_DIR, ext: /\.md$/, label: '.md' },
  tool: { dir: '.opencode/tools', ext: /\.(ts|js)$/, label: '.ts or .js' },
  hook: { dir: PLUGINS_DIR, ext: /\.(ts|js)$/, label: '.ts or .js' },
}
const FILE_TYPES = new Set(['skill', 'command', 'agent', 'context', 'tool', 'hook'])
/** The config keys each type may carry. */
const CONFIG_KEYS: Record<string, string | undefined> = { mcp: 'mcp', context: 'instructions' }
/** Types with nothing a workspace installs (`custom` objects live in the catalogue only). */
const IGNORED_TYPES = new Set(['custom'])

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const text = (value: unknown, max = 256): string | null =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : null

class Refused extends Error {}

function decode(file: Record<string, unknown>): Uint8Array {
  const content = file.content
  if (typeof content !== 'string') throw new Refused('file content is missing')
  if (file.encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content)) throw new Refused('file content is not base64')
    return new Uint8Array(Buffer.from(content, 'base64'))
  }
  if (file.encoding === undefined || file.encoding === 'utf8') return new TextEncoder().encode(content)
  throw new Refused('file encoding must be utf8 or base64')
}

const NO_BYTES = new Uint8Array()

function itemFiles(
  item: Record<string, unknown>,
  type: string,
  name: string,
  limits: SkillLimits,
  pathsOnly: boolean,
): DeliveredFile[] {
  const raw = item.files ?? []
  if (!Array.isArray(raw)) throw new Refused('files must be a list')
  if (!FILE_TYPES.has(type)) {
    if (raw.length) throw new Refused(`a ${type} item carries no files here`)
    return []
  }
  if (raw.length > limits.maxFiles) throw new Refused(`more than ${limits.maxFiles} files`)
  const home = type === 'skill' ? `${SKILLS_DIR}/${name}` : HOME[type]!.dir
  const seen = new Set<string>()
  let total = 0
  const files: DeliveredFile[] = []
  for (const entry of raw) {
    if (!isObject(entry)) throw new Refused('a file entry is not an object')
    let inner: string
    let rel: string
    try {
      inner = normalizeSkillPath(String(entry.path), { allowSkillFile: true })
      rel = normalizeRelPath(`${home}/${inner}`)
    } catch (error) {
      throw new Refused(`file path ${JSON.stringify(String(entry.path).slice(0, 120))}: ${(error as Error).message}`)
    }
    if (!rel.startsWith(`${home}/`)) throw new Refused(`file path ${inner} leaves the item's folder`)
    if (type !== 'skill' && (inner.includes('/') || !HOME[type]!.ext.test(inner) || raw.length !== 1))
      throw new Refused(`a ${type} is one ${HOME[type]!.label} file in ${home}`)
    const key = rel.toLowerCase()
    if (seen.has(key)) throw new Refused(`file ${inner} appears twice`)
    seen.add(key)
    if (pathsOnly) {
      files.push({ rel, bytes: NO_BYTES, executable: entry.executable === true, sha256: '' })
      continue
    }
    const bytes = decode(entry)
    if (bytes.byteLength > limits.maxFileBytes)
      throw new Refused(`file ${inner} is larger than ${limits.maxFileBytes} bytes`)
    total += bytes.byteLength
    if (total > limits.maxBytes) throw new Refused(`files together are larger than ${limits.maxBytes} bytes`)
    if (typeof entry.size === 'number' && entry.size !== bytes.byteLength)
      throw new Refused(`file ${inner}: size does not match`)
    const sha256 = createSha256().update(bytes).hex()
    if (entry.sha256 !== undefined && entry.sha256 !== sha256) throw new Refused(`file ${inner}: sha256 does not match`)
    files.push({ rel, bytes, executable: entry.executable === true, sha256 })
  }
  if (type === 'skill' && !seen.has(`${home}/skill.md`.toLowerCase())) throw new Refused('a skill needs SKILL.md')
  return files
}

function itemConfig(
  item: Record<string, unknown>,
  type: string,
  files: DeliveredFile[],
): { mcp: Record<string, Record<string, unknown>>; instructions: string[] } {
  const config = item.config
  const allowed = CONFIG_KEYS[type]
  if (config === undefined || config === null) {
    if (type === 'mcp') throw new Refused('an mcp item needs a config fragment')
    return { mcp: {}, instructions: [] }
  }
  if (!isObject(config)) throw new Refused('config must be an object')
  const keys = Object.keys(config)
  if (keys.some((k) => k !== allowed))
    throw new Refused(`a ${type} item's config may carry ${allowed ?? 'nothing'} (got ${keys.join(', ')})`)
  if (allowed === 'instructions') {
    const list = config.instructions
    // Only the item's own files: an instruction path elsewhere would make OpenCode read anything.
    if (!Array.isArray(list) || !list.every((p) => typeof p === 'string' && files.some((f) => f.rel === p)))
      throw new Refused("config.instructions may only list the item's own files")
    return { mcp: {}, instructions: [...new Set(list as string[])] }
  }
  if (allowed !== 'mcp') return { mcp: {}, instructions: [] }
  const map = config.mcp
  if (!isObject(map)) throw new Refused('config.mcp must be an object')
  const out: Record<string, Record<string, unknown>> = {}
  for (const [name, entry] of Object.entries(map)) {
    if (!isMcpName(name)) throw new Refused(`MCP name ${JSON.stringify(String(name).slice(0, 80))} is not allowed`)
    const checked = checkMcpServer(entry)
    if (!checked.ok) throw new Refused(`MCP ${name}: ${checked.path ? `${checked.path}: ` : ''}${checked.message}`)
    out[name] = checked.server
  }
  return { mcp: out, instructions: [] }
}

const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

function itemProviders(item: Record<string, unknown>): Record<string, Record<string, unknown>> {
  const config = item.config
  if (Array.isArray(item.files) && item.files.length) throw new Refused('a model provider carries no files')
  if (!isObject(config) || Object.keys(config).some((k) => k !== 'provider') || !isObject(config.provider))
    throw new Refused('a model provider needs config.provider and nothing else')
  const out: Record<string, Record<string, unknown>> = {}
  for (const [name, entry] of Object.entries(config.provider)) {
    if (!PROVIDER_NAME.test(name) || !isObject(entry)) throw new Refused('a model provider entry is not valid')
    out[name] = entry
  }
  return out
}

/**
 * Validates a delivery document. Throws (a plain Error) when the document itself is malformed;
 * a malformed item is only refused.
 */
export function parseDelivery(
  body: Record<string, unknown>,
  limits: SkillLimits,
  /**
   * objectId → digest of the items as last applied: those still at that digest are read for their
   * paths only (checked all the same), since an incremental plan does not write them.
   */
  known: Record<string, string> = {},
  /** `providers`: accept `llm_provider` items (a Worker's link; a member never receives them). */
  options: { providers?: boolean } = {},
): DeliveredSet {
  const digest = text(body.digest, 128)
  const org = body.organization
  if (!digest || !isObject(org) || !text(org.id) || !text(org.name, 1024) || !Array.isArray(body.items))
    throw new Error('delivery document lacks digest, organization or items')
  if (body.items.length > MAX_ITEMS) throw new Error(`delivery carries more than ${MAX_ITEMS} items`)
  const items: DeliveredItem[] = []
  const rejected: DeliveredSet['rejected'] = []
  const claimed = new Map<string, string>()
  for (const raw of body.items) {
    if (!isObject(raw)) {
      rejected.push({ objectId: '', name: '', reason: 'item is not an object' })
      continue
    }
    const objectId = text(raw.objectId) ?? ''
    const name = text(raw.name) ?? ''
    try {
      const type = text(raw.type, 32)
      const versionId = text(raw.versionId)
      const itemDigest = text(raw.digest, 128)
      if (!objectId || !type || !versionId || !itemDigest)
        throw new Refused('objectId, type, versionId or digest missing')
      // Provider keys belong to Workers' model configuration, which a workspace link does not write.
      if (IGNORED_TYPES.has(type)) continue
      const providerItem = type === 'llm_provider' && options.providers === true
      if (!FILE_TYPES.has(type) && type !== 'mcp' && !providerItem)
        throw new Refused(
          `type ${type} is not delivered to ${type === 'llm_provider' ? 'a linked desktop' : 'a workspace'}`,
        )
      if (type === 'skill' ? !isSkillName(name) : !name || name.length > 128)
        throw new Refused(`name ${JSON.stringify(name.slice(0, 80))} is not allowed for a ${type}`)
      const contentSkipped = known[objectId] === itemDigest
      const files = itemFiles(raw, type, name, limits, contentSkipped)
      const { mcp, instructions } = providerItem ? { mcp: {}, instructions: [] } : itemConfig(raw, type, files)
      const provider = providerItem ? itemProviders(raw) : {}
      // Two items must not claim one file or one MCP name: which one wins would depend on order.
      const claims = [...files.map((f) => f.rel.toLowerCase()), ...Object.keys(mcp).map((n) => `mcp/${n}`)]
      const clash = claims.find((c) => claimed.has(c))
      if (clash) throw new Refused(`${clash} is also delivered by ${claimed.get(clash)}`)
      for (const c of claims) claimed.set(c, objectId)
      items.push({
        objectId,
        type,
        name,
        versionId,
        digest: itemDigest,
        folder: type === 'skill' ? `${SKILLS_DIR}/${name}` : null,
        files,
        mcp,
        instructions,
        provider,
        contentSkipped,
      })
    } catch (error) {
      if (!(error instanceof Refused)) throw error
      rejected.push({ objectId, name: name.slice(0, 128), reason: error.message })
    }
  }
  return {
    digest,
    organization: { id: String(org.id), name: String(org.name) },
    principal: isObject(body.principal) ? body.principal : {},
    items,
    rejected,
  }
}
