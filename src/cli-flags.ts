/**
 * Command-line flags for `service-server`, declared once: the parser, the `--help` text
 * (`help-text.ts`) and the error for an unknown flag all come from this table.
 * @module
 */
import type { parseArgs as ParseArgs } from 'node:util'

/** Which mode a flag belongs to. */
export type FlagScope = 'common' | 'workspace' | 'control-plane'

/** One flag: its parser type, which mode it belongs to, and its `--help` line. */
export interface FlagSpec {
  type: 'string' | 'boolean'
  multiple?: boolean
  short?: string
  scope: FlagScope
  value?: string
  help: string
}

/** Every flag the server accepts. */
export const FLAGS: Record<string, FlagSpec> = {
  mode: {
    type: 'string',
    scope: 'common',
    value: 'workspace|control-plane',
    help: 'Which surface to serve (default workspace)',
  },
  config: {
    type: 'string',
    scope: 'common',
    value: 'path',
    help: 'Config file; a path that does not exist stops start-up (exit 2)',
  },
  host: { type: 'string', scope: 'common', value: 'addr', help: 'Bind address (default 127.0.0.1)' },
  port: {
    type: 'string',
    scope: 'common',
    value: 'n',
    help: 'Port; 0 picks a free one (default 8787 workspace, 8790 control plane)',
  },
  'data-dir': {
    type: 'string',
    scope: 'common',
    value: 'dir',
    help: 'State directory (default $XDG_DATA_HOME/service, XDG_DATA_HOME ~/.local/share)',
  },
  'log-format': {
    type: 'string',
    scope: 'common',
    value: 'pretty|json',
    help: 'Log line format on stderr (default pretty)',
  },
  cors: {
    type: 'string',
    scope: 'common',
    value: 'origins',
    help: 'Comma-separated allowed CORS origins, or * (default none)',
  },
  'log-requests': { type: 'boolean', scope: 'common', help: 'Log one line per request (default off)' },
  help: {
    type: 'boolean',
    short: 'h',
    scope: 'common',
    help: "Show help; with --mode, that mode's flags and settings",
  },
  version: { type: 'boolean', short: 'v', scope: 'common', help: 'Print the version' },
  token: {
    type: 'string',
    scope: 'workspace',
    value: 'secret',
    help: 'Client token (prefer the config file or SERVICE_TOKEN: flags show in process lists)',
  },
  'host-token': {
    type: 'string',
    scope: 'workspace',
    value: 'secret',
    help: 'Host token (prefer the config file or SERVICE_HOST_TOKEN)',
  },
  approval: {
    type: 'string',
    scope: 'workspace',
    value: 'manual|auto',
    help: 'Approval mode for writes (default manual)',
  },
  'approval-timeout': {
    type: 'string',
    scope: 'workspace',
    value: 'ms',
    help: 'How long a write waits for the host (default 30000)',
  },
  workspace: {
    type: 'string',
    multiple: true,
    scope: 'workspace',
    value: 'path',
    help: 'A workspace directory; repeat for several (default: the current directory)',
  },
  'read-only': { type: 'boolean', scope: 'workspace', help: 'Refuse every write' },
  database: {
    type: 'string',
    scope: 'control-plane',
    value: 'path',
    help: 'SQLite database file (default <data-dir>/control-plane.sqlite)',
  },
  'database-url': {
    type: 'string',
    scope: 'control-plane',
    value: 'url',
    help: 'postgres://… opens PostgreSQL (prefer SERVICE_DATABASE_URL: flags show in process lists)',
  },
}

/** A usage problem: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** Parsed flags: string, string[] or boolean values keyed by long name. */
export type Flags = Record<string, string | string[] | boolean | undefined>

const MODES = ['workspace', 'control-plane'] as const
/** The two surfaces. */
export type Mode = (typeof MODES)[number]

/**
 * The flags of an ordinary command line, parsed as `node:util`'s `parseArgs` would: each argument a
 * known `--name=value` or `--name value` (the value not starting with `-`), a known boolean `--name`,
 * or `-h`/`-v`; a repeated flag keeps its last value, a `multiple` one all of them. Null for
 * anything else (unknown or malformed flags, positionals, `--`), which `parseArgs` then parses or
 * refuses with its own message. Why: evaluating `node:util` costs every start about 1.5 MB of
 * resident memory (bench/results/history.md, "Workspace memory"), only to read a handful of flags.
 */
function parseOrdinary(argv: string[]): Flags | null {
  // Null prototype, like parseArgs' values: a flag named like an Object method reads as unset.
  const flags: Flags = Object.create(null)
  const shorts: Record<string, string> = { '-h': 'help', '-v': 'version' }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const short = shorts[arg]
    if (short) {
      flags[short] = true
      continue
    }
    if (!arg.startsWith('--') || arg === '--') return null
    const equals = arg.indexOf('=')
    const name = equals < 0 ? arg.slice(2) : arg.slice(2, equals)
    const spec = Object.hasOwn(FLAGS, name) ? FLAGS[name]! : undefined
    if (!spec) return null
    let value: string | boolean
    if (spec.type === 'boolean') {
      if (equals >= 0) return null
      value = true
    } else if (equals >= 0) {
      value = arg.slice(equals + 1)
    } else {
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('-')) return null
      value = next
      i++
    }
    if (spec.multiple) flags[name] = [...((flags[name] as string[] | undefined) ?? []), value as string]
    else flags[name] = value
  }
  return flags
}

/** `node:util`'s `parseArgs`, evaluated only for a command line {@link parseOrdinary} leaves to it. */
function parseStrictly(argv: string[]): Flags {
  const { parseArgs } = process.getBuiltinModule('node:util') as { parseArgs: typeof ParseArgs }
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(
        Object.entries(FLAGS).map(([name, f]) => [
          name,
          { type: f.type, ...(f.multiple ? { multiple: true } : {}), ...(f.short ? { short: f.short } : {}) },
        ]),
      ),
      strict: true,
      allowPositionals: false,
    })
  } catch (error) {
    const message = (error as Error).message
    const unknown = /Unknown option '([^']+)'/.exec(message)?.[1]
    const valid = Object.keys(FLAGS)
      .map((n) => `--${n}`)
      .join(', ')
    if (unknown) throw new UsageError(`unknown option ${unknown}; valid options: ${valid}`)
    const positional = /Unexpected argument '([^']+)'/.exec(message)?.[1]
    if (positional)
      throw new UsageError(
        `unexpected argument '${positional}'; valid commands: approvals, tokens, control-plane; valid options: ${valid}`,
      )
    throw new UsageError(`${message.split('\n')[0]}; valid options: ${valid}`)
  }
  return parsed.values as Flags
}

/** Parses server flags, rejecting unknown flags, positionals, bad modes and flags of the other mode. */
export function parseServerFlags(argv: string[]): { mode: Mode; flags: Flags } {
  const flags = parseOrdinary(argv) ?? parseStrictly(argv)
  const mode = (flags.mode ?? 'workspace') as string
  if (!MODES.includes(mode as Mode)) throw new UsageError(`invalid --mode '${mode}'; valid modes: ${MODES.join(', ')}`)
  for (const [name, value] of Object.entries(flags)) {
    const scope = FLAGS[name]?.scope
    if (value !== undefined && scope && scope !== 'common' && scope !== mode) {
      throw new UsageError(`option --${name} applies to --mode ${scope}, not ${mode}`)
    }
  }
  return { mode: mode as Mode, flags }
}
