/**
 * Layered settings: per key, command-line flag > environment variable > config file > default.
 *
 * Every problem is a {@link ConfigError} naming where the bad value came from (the file, the
 * variable or the flag), the key and what is wrong, so start-up can stop with exit code 2 and one
 * useful line instead of silently treating a broken file as empty (as the reference does).
 * @module
 */
import { join } from 'node:path'
import * as v from 'valibot'
import { readFileSync } from 'node:fs'

/** A configuration problem that should stop start-up with exit code 2. */
export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly key: string,
    readonly problem: string,
  ) {
    super(`invalid configuration in ${source}: ${key ? `key "${key}": ` : ''}${problem}`)
    this.name = 'ConfigError'
  }
}

/** The environment, as a plain map (tests pass their own). */
export type Env = Record<string, string | undefined>

/** Where a setting's value came from; reported in status output without the value. */
export type SettingSource = 'flag' | 'env' | 'file' | 'default' | 'generated' | 'stored'

/**
 * The user's home directory when HOME is unset (from the account database). `node:os` is evaluated
 * only then: it costs every start about 0.5 MB of resident memory (bench/results/history.md, "Workspace memory").
 */
function homedir(): string {
  return (process.getBuiltinModule('node:os') as typeof import('node:os')).homedir()
}

/** `~/.config/service` unless XDG_CONFIG_HOME says otherwise. */
export function defaultConfigDir(env: Env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'service')
}

/** `~/.local/share/service` unless XDG_DATA_HOME says otherwise. */
export function defaultDataDir(env: Env): string {
  return join(env.XDG_DATA_HOME || join(env.HOME || homedir(), '.local', 'share'), 'service')
}

/** Names whose values are credentials: never echoed, whatever the validation message says. */
const SECRET_NAME = /token|password|passwd|secret|key|credential|auth|database_url|dsn/i

/**
 * Removes a raw value (and any URL password inside it) from a message. Validation messages can
 * quote what they received, and start-up errors go to terminals, logs and CI output.
 */
export function withoutValue(message: string, raw: unknown): string {
  if (typeof raw !== 'string' || raw === '') return message
  let out = message.split(raw).join('[redacted]')
  for (const match of raw.matchAll(/:\/\/[^/@\s:]*:([^@\s/]+)@/g)) out = out.split(match[1]!).join('[redacted]')
  return out
}

/** Whether a value may be quoted back in an error: never for credentials or URLs that carry one. */
function echoable(name: string, raw: string): boolean {
  return !SECRET_NAME.test(name) && !/:\/\/[^/@\s]*@/.test(raw)
}

/** Parses an env var with a valibot schema, naming the variable on failure (never quoting a secret). */
export function envValue<S extends v.GenericSchema>(env: Env, name: string, schema: S): v.InferOutput<S> | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const result = v.safeParse(schema, raw)
  if (!result.success) {
    const message = withoutValue(result.issues[0]?.message ?? 'invalid value', raw)
    const shown = echoable(name, raw) ? ` (got ${JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)})` : ''
    throw new ConfigError(`environment variable ${name}`, '', `${message}${shown}`)
  }
  return result.output
}

/** Parses a flag value with a valibot schema, naming the flag on failure. */
export function flagValue<S extends v.GenericSchema>(
  flags: Record<string, unknown>,
  name: string,
  schema: S,
): v.InferOutput<S> | undefined {
  const raw = flags[name]
  if (raw === undefined) return undefined
  const result = v.safeParse(schema, raw)
  if (!result.success)
    throw new ConfigError(
      `command-line option --${name}`,
      '',
      withoutValue(result.issues[0]?.message ?? 'invalid value', raw),
    )
  return result.output
}

/** The error for a config file that was named explicitly but is not there. */
export function missingConfigFile(path: string, namedBy: string): ConfigError {
  return new ConfigError(
    path,
    '',
    `file does not exist (named by ${namedBy}); create it (an empty {} will do) or fix the path`,
  )
}

/** Why a file could not be read, in words, for the errno codes a config path typically hits. */
const READ_FAILURES: Record<string, string> = {
  EISDIR: 'is a directory, not a file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a parent of the path is not a directory',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'path too long',
}

/** Reads and validates a JSON config file. A missing file returns null; anything else wrong throws. */
export function readConfigFile<S extends v.GenericSchema>(path: string, schema: S): v.InferOutput<S> | null {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    const reason = code ? READ_FAILURES[code] : undefined
    throw new ConfigError(path, '', `cannot read file: ${reason ? `${reason} (${code})` : (code ?? 'error')}`)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (error) {
    // Parser messages quote the text they choke on, which may be part of a token in the file.
    const reason = (error as Error).message.replace(/"[^"]*"|'[^']*'|`[^`]*`/g, '…')
    throw new ConfigError(path, '', `not valid JSON (${reason})`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(path, '', 'top level must be a JSON object')
  const result = v.safeParse(schema, raw)
  if (!result.success) {
    const issue = result.issues[0]!
    throw new ConfigError(path, v.getDotPath(issue) ?? '', withoutValue(issue.message, issue.input))
  }
  return result.output
}

/** Env schemas shared by both modes. */
export const envSchemas = {
  port: v.pipe(
    v.string(),
    v.regex(/^\d+$/, 'must be a port number 0-65535'),
    v.transform(Number),
    v.maxValue(65535, 'must be a port number 0-65535'),
  ),
  bool: v.pipe(
    v.string(),
    v.toLowerCase(),
    v.picklist(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'], 'must be true or false'),
    v.transform((s) => ['1', 'true', 'yes', 'on'].includes(s)),
  ),
  list: v.pipe(
    v.string(),
    v.transform((s) =>
      s
        .split(/[,;]/)
        .map((x) => x.trim())
        .filter(Boolean),
    ),
  ),
  positiveInt: v.pipe(
    v.string(),
    v.regex(/^\d+$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(1, 'must be at least 1'),
  ),
  logFormat: v.picklist(['pretty', 'json'], 'must be pretty or json'),
}

/** The first defined value in precedence order, with where it came from. */
export function pick<T>(
  ...candidates: Array<[T | undefined, SettingSource]>
): [T, SettingSource] | [undefined, undefined] {
  for (const [value, source] of candidates) if (value !== undefined) return [value, source]
  return [undefined, undefined]
}

/** The file keys both modes read alike. */
export interface ServerFileKeys {
  host?: string
  port?: number
  corsOrigins?: string[]
  logFormat?: 'pretty' | 'json'
  logRequests?: boolean
}

/** Where to listen, which browser origins may call, and how to log: read the same way in both modes. */
export interface ServerSettings {
  host: string
  port: number
  corsOrigins: string[]
  logFormat: 'pretty' | 'json'
  logRequests: boolean
}

/**
 * Resolves the settings every mode shares (flag > `SERVICE_*` variable > file > default), so the two
 * surfaces cannot drift on how `--host`, `--port`, `--cors` and logging are read; only the default
 * port differs by mode.
 */
export function serverSettings(
  flags: Record<string, unknown>,
  env: Env,
  file: ServerFileKeys,
  defaultPort: number,
): ServerSettings {
  const [host] = pick<string>(
    [flagValue(flags, 'host', v.pipe(v.string(), v.minLength(1))), 'flag'],
    [env.SERVICE_HOST || undefined, 'env'],
    [file.host, 'file'],
    ['127.0.0.1', 'default'],
  )
  const [port] = pick<number>(
    [flagValue(flags, 'port', envSchemas.port), 'flag'],
    [envValue(env, 'SERVICE_PORT', envSchemas.port), 'env'],
    [file.port, 'file'],
    [defaultPort, 'default'],
  )
  const [corsOrigins] = pick<string[]>(
    [flagValue(flags, 'cors', envSchemas.list), 'flag'],
    [envValue(env, 'SERVICE_CORS_ORIGINS', envSchemas.list), 'env'],
    [file.corsOrigins, 'file'],
    [[], 'default'],
  )
  const [logFormat] = pick<'pretty' | 'json'>(
    [flagValue(flags, 'log-format', envSchemas.logFormat), 'flag'],
    [envValue(env, 'SERVICE_LOG_FORMAT', envSchemas.logFormat), 'env'],
    [file.logFormat, 'file'],
    ['pretty', 'default'],
  )
  const [logRequests] = pick<boolean>(
    [flags['log-requests'] ? true : undefined, 'flag'],
    [envValue(env, 'SERVICE_LOG_REQUESTS', envSchemas.bool), 'env'],
    [file.logRequests, 'file'],
    [false, 'default'],
  )
  return { host: host!, port: port!, corsOrigins: corsOrigins!, logFormat: logFormat!, logRequests: logRequests! }
}

/** True when a bind address is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host)
}
