/**
 * Turning a version's input into its normalized payload, per object type. A version is given as
 * raw source text (a SKILL.md, a command or agent markdown file, an MCP server definition in
 * JSON, a tool or hook module, a context document, custom JSON) or as an already-normalized
 * payload; both are validated the same way at write time, so an invalid source is a 422 naming
 * the field at fault and can never reach a runtime. The normalized payload is what the resolved
 * view renders into files.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import { FrontmatterError, parseFrontmatter } from '../../opencode/frontmatter.ts'
import { checkMcpServer, isMcpName, MCP_NAME_RULE } from '../../opencode/mcp-entries.ts'
import { isSkillDescription, isSkillName, SKILL_NAME_RULE } from '../../opencode/names.ts'
import { AgentFieldsSchema, CommandFieldsSchema, parseJsonc, schemaIssues } from '../../opencode/opencode-config.ts'
import {
  bundleHash,
  DEFAULT_SKILL_LIMITS,
  decodeWireFiles,
  type SkillLimits,
  toStored,
  type WireFileIn,
} from '../../opencode/skill-bundle.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Config object types. */
export const OBJECT_TYPES = ['skill', 'agent', 'command', 'tool', 'mcp', 'hook', 'context', 'custom'] as const
/** A config object type. */
export type ObjectType = (typeof OBJECT_TYPES)[number]

/** A version's input as the API receives it. */
export interface VersionInput {
  rawSourceText?: string
  normalizedPayload?: Record<string, unknown>
  /** Skills only: the files beside SKILL.md (`{path, contentBase64 | content, executable?}`). */
  files?: WireFileIn[]
}

/** The result of normalizing an input. */
export interface NormalizedSource {
  /** File-safe name the resolved files use. */
  name: string
  payload: Record<string, unknown>
  /** Text searched by `q` besides the title and description. */
  searchText: string
  /** Skills: JSON of the stored files (`[]` when none); null for other types. */
  files: string | null
  /** Skills: the bundle hash over SKILL.md as rendered and every file; null for other types. */
  contentHash: string | null
}

/** What each non-skill type's normalizer returns (only skills have files and a bundle hash). */
type PlainSource = Omit<NormalizedSource, 'files' | 'contentHash'>

/** 422 for a source that is invalid for its type, naming the field and a machine-readable reason. */
export function invalidSource(path: string, message: string, reason: string): ApiError {
  return controlPlaneError('validation_failed', `Invalid source: ${message}`, {
    details: { reason, issues: [{ path, message }] },
  })
}

/** A file-safe name from a title: lowercase words joined by hyphens, at most 64 characters. */
export function slugify(title: string): string {
  const slug = title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '')
  return slug || 'untitled'
}

const RAW = 'input.rawSourceText'
const PAYLOAD = 'input.normalizedPayload'

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

function checkName(name: unknown, path: string, reason = 'invalid_name'): string {
  if (!isSkillName(name)) throw invalidSource(path, SKILL_NAME_RULE, reason)
  return name
}

async function markdown(raw: string): Promise<{ frontmatter: Record<string, unknown> | null; body: string }> {
  try {
    const doc = await parseFrontmatter(raw)
    return { frontmatter: doc.hasFrontmatter ? doc.data : null, body: doc.body }
  } catch (error) {
    if (error instanceof FrontmatterError)
      throw invalidSource(`${RAW}.frontmatter`, error.message, 'invalid_frontmatter')
    throw error
  }
}

function plainFrontmatter(frontmatter: Record<string, unknown> | null, omit: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(frontmatter ?? {}).filter(([k]) => !omit.includes(k)))
}

/**
 * SKILL.md rules (spec §4B rule 5): name pattern, description 1–1024, non-empty body; plus the
 * folder's other files under the skill limits (413/422 naming the limit and path).
 */
async function skill(input: VersionInput, limits: SkillLimits): Promise<NormalizedSource> {
  let name: unknown, description: unknown, body: unknown, metadata: Record<string, unknown>, base: string
  if (input.rawSourceText !== undefined) {
    const doc = await markdown(input.rawSourceText)
    if (!doc.frontmatter)
      throw invalidSource(
        `${RAW}.frontmatter`,
        'a SKILL.md starts with a --- frontmatter block holding name and description',
        'invalid_skill_frontmatter',
      )
    ;({ name, description } = doc.frontmatter)
    body = doc.body
    metadata = plainFrontmatter(doc.frontmatter, ['name', 'description'])
    base = `${RAW}.frontmatter`
  } else {
    const p = input.normalizedPayload!
    ;({ name, description, body } = p)
    metadata = (p.metadata && typeof p.metadata === 'object' && !Array.isArray(p.metadata) ? p.metadata : {}) as Record<
      string,
      unknown
    >
    base = PAYLOAD
  }
  checkName(name, `${base}.name`, 'invalid_skill_name')
  if (!isSkillDescription(description)) {
    throw invalidSource(`${base}.description`, 'description must be 1-1024 characters', 'invalid_skill_description')
  }
  if (typeof body !== 'string' || body.trim() === '') {
    throw invalidSource(
      input.rawSourceText !== undefined ? `${RAW}.body` : `${PAYLOAD}.body`,
      'the skill body (after the frontmatter) must not be empty',
      'invalid_skill_body',
    )
  }
  const skillMd = input.rawSourceText ?? JSON.stringify({ name, description: description.trim(), body, metadata })
  let files
  try {
    files = decodeWireFiles(Buffer.byteLength(skillMd), input.files ?? [], limits)
  } catch (error) {
    // Name the field the way this API spells it; the code, limit and file path stay.
    if (error instanceof ApiError && error.status === 422) {
      const details = (error.details ?? {}) as Record<string, unknown>
      throw controlPlaneError('validation_failed', `Invalid source: ${error.message}`, {
        details: { ...details, reason: error.code, issues: [{ path: 'input.files', message: error.message }] },
      })
    }
    throw error
  }
  return {
    name: name as string,
    payload: { name, description: description.trim(), body, metadata },
    searchText: `${name} ${description} ${body} ${files.map((f) => f.path).join(' ')}`,
    files: JSON.stringify(toStored(files)),
    contentHash: bundleHash(skillMd, files),
  }
}

/** Markdown-with-frontmatter types: commands (a template) and agents (a prompt). */
async function promptFile(type: 'command' | 'agent', input: VersionInput, title: string): Promise<PlainSource> {
  const bodyKey = type === 'command' ? 'template' : 'prompt'
  let fields: Record<string, unknown>
  let body: unknown
  let base: string
  if (input.rawSourceText !== undefined) {
    const doc = await markdown(input.rawSourceText)
    fields = doc.frontmatter ?? {}
    body = doc.body
    base = `${RAW}.frontmatter`
  } else {
    fields = { ...input.normalizedPayload }
    body = fields[bodyKey]
    delete fields[bodyKey]
    base = PAYLOAD
  }
  const name = fields.name === undefined ? slugify(title) : checkName(fields.name, `${base}.name`)
  if (typeof body !== 'string' || body.trim() === '') {
    throw invalidSource(
      input.rawSourceText !== undefined ? `${RAW}.body` : `${PAYLOAD}.${bodyKey}`,
      `the ${type} ${bodyKey} must not be empty`,
      `invalid_${type}_${bodyKey}`,
    )
  }
  const description = fields.description
  if (description !== undefined && (typeof description !== 'string' || description.length > 1024)) {
    throw invalidSource(
      `${base}.description`,
      'description must be a string of at most 1024 characters',
      `invalid_${type}_description`,
    )
  }
  if (type === 'agent' && (typeof description !== 'string' || description.trim() === ''))
    throw invalidSource(
      `${base}.description`,
      'an agent needs a description (OpenCode shows it when choosing agents)',
      'invalid_agent_description',
    )
  // The same field rules OpenCode applies to `agent.<name>` and `command.<name>` in opencode.json.
  const refused = schemaIssues(type === 'agent' ? AgentFieldsSchema : CommandFieldsSchema, fields)[0]
  if (refused)
    throw invalidSource(`${base}.${refused.path}`, refused.message, `invalid_${type}_${refused.path.split('.')[0]}`)
  const rest = Object.fromEntries(Object.entries(fields).filter(([k]) => k !== 'name'))
  return { name, payload: { name, ...rest, [bodyKey]: body }, searchText: `${name} ${str(description) ?? ''} ${body}` }
}

/** A JSON object as OpenCode reads its config: comments and trailing commas allowed. */
async function parseJsonObject(raw: string, what: string): Promise<Record<string, unknown>> {
  if (raw.trim() === '') throw invalidSource(RAW, `${what} must be a JSON object, not empty text`, 'invalid_json')
  const { value, problems } = await parseJsonc(raw)
  const first = problems[0]
  if (first) throw invalidSource(RAW, `${what} must be JSON: ${first.code} at offset ${first.offset}`, 'invalid_json')
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalidSource(RAW, `${what} must be a JSON object`, 'invalid_json')
  return value as Record<string, unknown>
}

/**
 * An MCP server as OpenCode configures it: local (a command) or remote (a URL), checked by the
 * rule the workspace server applies to the same entry; given bare or as `{name, config}`.
 */
async function mcp(input: VersionInput, title: string): Promise<PlainSource> {
  const source =
    input.rawSourceText !== undefined
      ? await parseJsonObject(input.rawSourceText, 'an MCP server definition')
      : input.normalizedPayload!
  const base = input.rawSourceText !== undefined ? RAW : PAYLOAD
  const wrapped = Boolean(source.config && typeof source.config === 'object')
  const name = source.name === undefined ? slugify(title) : source.name
  if (!isMcpName(name)) throw invalidSource(`${base}.name`, MCP_NAME_RULE, 'invalid_mcp_name')
  const checked = checkMcpServer(wrapped ? source.config : source)
  if (!checked.ok)
    throw invalidSource(
      `${base}${wrapped ? '.config' : ''}.${checked.path || 'type'}`,
      checked.message,
      'invalid_mcp_definition',
    )
  const config = checked.server
  return { name, payload: { name, config }, searchText: `${name} ${JSON.stringify(config)}` }
}

/** Tools and hooks: a JavaScript or TypeScript module OpenCode loads. */
function moduleSource(type: 'tool' | 'hook', input: VersionInput, title: string): PlainSource {
  const p = input.normalizedPayload
  const source = input.rawSourceText ?? p?.source
  const sourcePath = input.rawSourceText !== undefined ? RAW : `${PAYLOAD}.source`
  if (typeof source !== 'string' || source.trim() === '')
    throw invalidSource(sourcePath, `a ${type} needs its module source`, `invalid_${type}_source`)
  if (!/\bexport\b/.test(source))
    throw invalidSource(
      sourcePath,
      `a ${type} module must export something for OpenCode to load`,
      `invalid_${type}_source`,
    )
  const name = p?.name === undefined ? slugify(title) : checkName(p.name, `${PAYLOAD}.name`)
  const language = p?.language ?? 'typescript'
  if (language !== 'typescript' && language !== 'javascript')
    throw invalidSource(`${PAYLOAD}.language`, 'language must be typescript or javascript', `invalid_${type}_source`)
  return { name, payload: { name, language, source }, searchText: `${name} ${source}` }
}

function context(input: VersionInput, title: string): PlainSource {
  const p = input.normalizedPayload
  const content = input.rawSourceText ?? p?.content
  if (typeof content !== 'string' || content.trim() === '')
    throw invalidSource(
      input.rawSourceText !== undefined ? RAW : `${PAYLOAD}.content`,
      'context content must not be empty',
      'invalid_context_content',
    )
  const name = p?.name === undefined ? slugify(title) : checkName(p.name, `${PAYLOAD}.name`)
  return { name, payload: { name, content }, searchText: `${name} ${content}` }
}

async function custom(input: VersionInput, title: string): Promise<PlainSource> {
  const payload =
    input.rawSourceText !== undefined
      ? await parseJsonObject(input.rawSourceText, 'a custom object')
      : input.normalizedPayload!
  return { name: slugify(title), payload, searchText: JSON.stringify(payload) }
}

/**
 * Validates and normalizes a version input for a type; throws 422 with the field at fault. Only
 * skills carry `files` (a skill is a folder); other types given files are refused.
 */
export async function normalizeSource(
  type: ObjectType,
  input: VersionInput,
  title: string,
  limits: SkillLimits = DEFAULT_SKILL_LIMITS,
): Promise<NormalizedSource> {
  if ((input.rawSourceText === undefined) === (input.normalizedPayload === undefined)) {
    throw invalidSource('input', 'give exactly one of rawSourceText or normalizedPayload', 'invalid_input')
  }
  if (type === 'skill') return skill(input, limits)
  if (input.files !== undefined)
    throw invalidSource('input.files', 'only skills carry files beside their source', 'files_not_allowed')
  const plain = await (async (): Promise<PlainSource> => {
    switch (type) {
      case 'command':
        return promptFile('command', input, title)
      case 'agent':
        return promptFile('agent', input, title)
      case 'mcp':
        return mcp(input, title)
      case 'tool':
        return moduleSource('tool', input, title)
      case 'hook':
        return moduleSource('hook', input, title)
      case 'context':
        return context(input, title)
      case 'custom':
        return custom(input, title)
    }
  })()
  return { ...plain, files: null, contentHash: null }
}
