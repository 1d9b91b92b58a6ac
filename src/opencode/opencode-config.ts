/**
 * The project config OpenCode reads (`opencode.jsonc`, else `opencode.json`): JSON with comments
 * and trailing commas, holding one object. The schema mirrors OpenCode's own (`Config` in
 * `@opencode-ai/sdk` 1.18, and what `opencode debug config` accepts and refuses) for the keys
 * either surface writes or renders: `mcp`, `plugin`, `command`, `agent`, `instructions` and the
 * plain settings around them. Unknown keys are allowed wherever OpenCode allows them, and nested
 * settings neither surface touches are only checked as far as their type, so a file OpenCode
 * accepts is never refused here.
 * @module
 */
import * as v from 'valibot'
import { jsonDepthExceededAt } from '../core/json-depth.ts'
import { lazyModule } from '../core/lazy-module.ts'
import { McpEntryFileSchema } from './mcp-entries.ts'

const jsonc = lazyModule(() => import('jsonc-parser'))

/** One JSONC syntax error: jsonc-parser's code name and where it is in the text. */
export interface JsoncProblem {
  code: string
  offset: number
  length: number
}

/** The value of a JSONC text, or its syntax errors (an empty text reads as `{}`). */
export async function parseJsonc(text: string): Promise<{ value: unknown; problems: JsoncProblem[] }> {
  if (text.trim() === '') return { value: {}, problems: [] }
  // The parser recurses per level: a text nested thousands deep would overflow the stack.
  const tooDeep = jsonDepthExceededAt(text)
  if (tooDeep >= 0) return { value: undefined, problems: [{ code: 'NestingTooDeep', offset: tooDeep, length: 1 }] }
  const { parse, printParseErrorCode } = await jsonc()
  const errors: import('jsonc-parser').ParseError[] = []
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false })
  return {
    value,
    problems: errors.map((p) => ({ code: printParseErrorCode(p.error), offset: p.offset, length: p.length })),
  }
}

const Strings = v.array(v.string())
const Action = v.picklist(['ask', 'allow', 'deny'])
const Permission = v.union([Action, v.record(v.string(), v.union([Action, v.record(v.string(), Action)]))])

/** Fields of an agent, in `agent.<name>` or an agent file's frontmatter (its prompt is the body). */
export const AgentFieldsSchema = v.looseObject({
  model: v.optional(v.string()),
  variant: v.optional(v.string()),
  temperature: v.optional(v.number()),
  top_p: v.optional(v.number()),
  tools: v.optional(v.record(v.string(), v.boolean())),
  disable: v.optional(v.boolean()),
  description: v.optional(v.string()),
  mode: v.optional(v.picklist(['subagent', 'primary', 'all'], 'mode must be primary, subagent or all')),
  hidden: v.optional(v.boolean()),
  options: v.optional(v.record(v.string(), v.unknown())),
  color: v.optional(v.string()),
  steps: v.optional(v.number()),
  maxSteps: v.optional(v.number()),
  permission: v.optional(Permission),
})

/** An agent in the config's `agent` (or legacy `mode`) map. */
const AgentEntrySchema = v.looseObject({ ...AgentFieldsSchema.entries, prompt: v.optional(v.string()) })

/** Fields of a command, in `command.<name>` or a command file's frontmatter (its template is the body). */
export const CommandFieldsSchema = v.looseObject({
  description: v.optional(v.string()),
  agent: v.optional(v.string()),
  model: v.optional(v.string()),
  variant: v.optional(v.string()),
  subtask: v.optional(v.boolean('subtask must be true or false')),
})

/** A command in the config's `command` map: OpenCode requires its template. */
const CommandEntrySchema = v.looseObject({ ...CommandFieldsSchema.entries, template: v.string() })

/** A plugin: an npm spec, a `file://` URL or path, or `[spec, options]`. */
export const PluginEntrySchema = v.union([v.string(), v.tuple([v.string(), v.record(v.string(), v.unknown())])])

/** The spec of a plugin entry (the first item of an `[spec, options]` pair); null for anything else. */
export function pluginSpecOf(entry: unknown): string | null {
  if (typeof entry === 'string') return entry
  if (Array.isArray(entry) && typeof entry[0] === 'string') return entry[0]
  return null
}

const Loose = v.looseObject({})

/** `opencode.json(c)` as OpenCode accepts it. */
export const OpencodeConfigSchema = v.looseObject({
  $schema: v.optional(v.string()),
  shell: v.optional(v.string()),
  logLevel: v.optional(v.picklist(['DEBUG', 'INFO', 'WARN', 'ERROR'])),
  server: v.optional(Loose),
  command: v.optional(v.record(v.string(), CommandEntrySchema)),
  skills: v.optional(v.looseObject({ paths: v.optional(Strings), urls: v.optional(Strings) })),
  watcher: v.optional(v.looseObject({ ignore: v.optional(Strings) })),
  snapshot: v.optional(v.boolean()),
  plugin: v.optional(v.array(PluginEntrySchema)),
  share: v.optional(v.picklist(['manual', 'auto', 'disabled'])),
  autoshare: v.optional(v.boolean()),
  autoupdate: v.optional(v.union([v.boolean(), v.literal('notify')])),
  disabled_providers: v.optional(Strings),
  enabled_providers: v.optional(Strings),
  model: v.optional(v.string()),
  small_model: v.optional(v.string()),
  default_agent: v.optional(v.string()),
  subagent_depth: v.optional(v.number()),
  username: v.optional(v.string()),
  mode: v.optional(v.record(v.string(), AgentEntrySchema)),
  agent: v.optional(v.record(v.string(), AgentEntrySchema)),
  provider: v.optional(v.record(v.string(), Loose)),
  mcp: v.optional(v.record(v.string(), McpEntryFileSchema)),
  formatter: v.optional(v.union([v.boolean(), v.record(v.string(), Loose)])),
  lsp: v.optional(v.union([v.boolean(), v.record(v.string(), Loose)])),
  instructions: v.optional(Strings),
  layout: v.optional(v.picklist(['auto', 'stretch'])),
  permission: v.optional(Permission),
  tools: v.optional(v.record(v.string(), v.boolean())),
  attachment: v.optional(Loose),
  enterprise: v.optional(Loose),
  tool_output: v.optional(Loose),
  compaction: v.optional(Loose),
  experimental: v.optional(Loose),
})

/** One field OpenCode would refuse: its dotted path in the config and why. */
export interface ConfigIssue {
  path: string
  message: string
}

/**
 * The deepest issue of a failed union (OpenCode's entries are unions: local, remote or a toggle
 * for MCP; a spec or a pair for plugins), so the message names the field at fault.
 */
function leaves(issues: ReadonlyArray<v.BaseIssue<unknown>>, prefix = ''): ConfigIssue[] {
  return issues.flatMap((issue) => {
    // A union's own issues carry paths from the union's input, not from the document's root.
    const path = [prefix, v.getDotPath(issue) ?? ''].filter(Boolean).join('.')
    return issue.issues?.length ? leaves(issue.issues, path) : [{ path, message: issue.message }]
  })
}

/** Validates a schema and returns its issues, one per field at fault (empty when valid). */
export function schemaIssues(schema: v.GenericSchema, value: unknown): ConfigIssue[] {
  const result = v.safeParse(schema, value)
  if (result.success) return []
  const seen = new Set<string>()
  const out: ConfigIssue[] = []
  for (const issue of leaves(result.issues)) {
    if (seen.has(issue.path)) continue
    seen.add(issue.path)
    out.push(issue)
  }
  return out
}

/** What in a config OpenCode would refuse to load; empty when it loads. */
export function checkOpencodeConfig(value: unknown): ConfigIssue[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ path: '', message: 'the config must be a JSON object' }]
  return schemaIssues(OpencodeConfigSchema, value)
}
