/**
 * Structured logging to stderr, as pretty text or JSON lines.
 *
 * Secrets never reach a log: field names that look like credentials are replaced with `[redacted]`
 * before formatting, and the request log records method, path, status and timing, never headers
 * or query strings.
 * @module
 */
import { writeSync } from 'node:fs'

/** Output format chosen by `--log-format`. */
export type LogFormat = 'pretty' | 'json'
type Level = 'debug' | 'info' | 'warn' | 'error'

/** Fields attached to a log line. */
export type LogFields = Record<string, unknown>

/** The logging interface handed to every component. */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger
  /**
   * One request-log line. Its fields are fixed and never secret (method, path, status, ms, id), so
   * it skips redaction: this runs once per request and must stay cheap.
   */
  access(fields: AccessFields): void
}

/** The fields of a request-log line. */
export interface AccessFields {
  method: string
  path: string
  status: number
  ms: number
  requestId: string
}

const SECRET_FIELD = /(authorization|password|passwd|secret|token|api[-_]?key|cookie|credential|private[-_]?key)/i
// Identifiers of secrets are fine to log; their values are not.
const SAFE_FIELD = /^(tokenId|keyId|apiKeyId|tokenSource|hostTokenSource|tokenHashPrefix)$/i

/** Returns a copy of `fields` with credential-looking values replaced. Nested objects are walked. */
export function redact(fields: LogFields, depth = 0): LogFields {
  const out: LogFields = {}
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_FIELD.test(key) && !SAFE_FIELD.test(key)) out[key] = '[redacted]'
    else if (value && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Error) && depth < 4)
      out[key] = redact(value as LogFields, depth + 1)
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message }
    else out[key] = value
  }
  return out
}

/**
 * A stderr writer that batches lines and flushes every few milliseconds: one write per request
 * would cost a syscall each and dominate the cost of cheap routes under load.
 */
export function bufferedStderr(intervalMs = 10): { write(line: string): void; flush(): void } {
  let pending: string[] = []
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer) {
      clearTimeout(timer)
      timer = undefined
    }
    if (pending.length === 0) return
    const chunk = pending.join('\n') + '\n'
    pending = []
    try {
      writeSync(2, chunk)
    } catch {
      /* stderr closed: nothing useful to do */
    }
  }
  return {
    write(line) {
      pending.push(line)
      if (pending.length >= 512) flush()
      else if (!timer) timer = setTimeout(flush, intervalMs)
    },
    flush,
  }
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  format: LogFormat
  /** Where lines go; defaults to stderr. Tests pass a collector. */
  write?: (line: string) => void
  level?: Level
}

// Formatting a timestamp showed up in request-path profiles; lines within one millisecond share it.
let lastMs = 0
let lastIso = ''
function isoNow(): string {
  const now = Date.now()
  if (now !== lastMs) {
    lastMs = now
    lastIso = new Date(now).toISOString()
  }
  return lastIso
}

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }

/** Creates a logger. */
export function createLogger(options: LoggerOptions, base: LogFields = {}): Logger {
  const write =
    options.write ??
    ((line: string) => {
      writeSync(2, line + '\n')
    })
  const min = ORDER[options.level ?? 'info']
  const emit = (level: Level, message: string, fields?: LogFields) => {
    if (ORDER[level] < min) return
    const all = redact({ ...base, ...fields })
    if (options.format === 'json') {
      write(JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...all }))
      return
    }
    const pairs = Object.entries(all).map(
      ([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`,
    )
    write(
      `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${message}${pairs.length ? ' ' + pairs.join(' ') : ''}`,
    )
  }
  const access = (f: AccessFields) => {
    if (ORDER.info < min) return
    const time = isoNow()
    if (options.format === 'json') {
      write(
        `{"time":"${time}","level":"info","msg":"request","method":${JSON.stringify(f.method)},"path":${JSON.stringify(f.path)},"status":${f.status},"ms":${f.ms},"requestId":${JSON.stringify(f.requestId)}}`,
      )
    } else {
      write(
        `${time} INFO  request method=${f.method} path=${f.path} status=${f.status} ms=${f.ms} requestId=${f.requestId}`,
      )
    }
  }
  return {
    access,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  }
}

/** A logger that discards everything (tests that do not inspect logs). */
export const silentLogger: Logger = createLogger({ format: 'json', write: () => {} })
