/**
 * The host's command line for a running workspace server:
 * `service-server approvals list|allow <id>|deny <id>` and
 * `service-server tokens list|create <scope> [--label l] [--ttl s]|revoke <id>`.
 *
 * It talks HTTP to the server (base URL from `--url`, `SERVICE_URL`, else the config file's
 * host and port) with the host token (`--host-token`, `SERVICE_HOST_TOKEN`, the config file or
 * the generated credentials file next to it), so it works against any running instance.
 * @module
 */
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { defaultConfigDir, type Env } from '../../core/settings.ts'
import { HOST_TOKEN_HEADER } from './auth.ts'

/** Process hooks for the CLI (tests pass their own). */
export interface HostCliIo {
  env: Env
  cwd: string
  stdout(line: string): void
  stderr(line: string): void
  fetch?: typeof fetch
}

/** The first argument words this module handles. */
export const HOST_COMMANDS = ['approvals', 'tokens'] as const

const USAGE = [
  'Usage:',
  '  service-server approvals list|allow <id>|deny <id> [--url <base>] [--host-token <t>] [--config <path>] [--json]',
  '  service-server tokens list|create <owner|collaborator|viewer> [--label <l>] [--ttl <seconds>]|revoke <id> [--url <base>] [--host-token <t>] [--config <path>] [--json]',
].join('\n')

function readJson(path: string): Record<string, unknown> {
  try {
    const value = JSON.parse(readFileSync(path, 'utf8'))
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** Where to reach the server and with which host token. */
export function resolveTarget(
  values: { url?: string; 'host-token'?: string; config?: string },
  io: Pick<HostCliIo, 'env' | 'cwd'>,
): { baseUrl: string; hostToken: string | undefined } {
  const configPath = resolve(
    io.cwd,
    values.config ?? io.env.SERVICE_SERVER_CONFIG ?? join(defaultConfigDir(io.env), 'server.json'),
  )
  const file = readJson(configPath)
  let baseUrl = values.url ?? io.env.SERVICE_URL
  if (!baseUrl) {
    const rawHost = typeof file.host === 'string' ? file.host : '127.0.0.1'
    const host =
      rawHost === '0.0.0.0'
        ? '127.0.0.1'
        : rawHost === '::'
          ? '[::1]'
          : rawHost.includes(':') && !rawHost.startsWith('[')
            ? `[${rawHost}]`
            : rawHost
    baseUrl = `http://${host}:${typeof file.port === 'number' && file.port > 0 ? file.port : 8787}`
  }
  const credentials = readJson(join(dirname(configPath), 'credentials.json'))
  const hostToken =
    values['host-token'] ??
    io.env.SERVICE_HOST_TOKEN ??
    (typeof file.hostToken === 'string' ? file.hostToken : undefined) ??
    (typeof credentials.hostToken === 'string' ? credentials.hostToken : undefined)
  return { baseUrl: baseUrl.replace(/\/+$/, ''), hostToken }
}

const time = (ms: unknown) => (typeof ms === 'number' ? new Date(ms).toISOString() : '-')

/** Runs a host command; returns the exit code (0 ok, 1 request failed, 2 usage). */
export async function runHostCli(argv: string[], io: HostCliIo): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string' },
        'host-token': { type: 'string' },
        config: { type: 'string' },
        label: { type: 'string' },
        ttl: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    io.stderr(`service-server: ${(error as Error).message.split('\n')[0]}\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  if (values.help) {
    io.stdout(USAGE)
    return 0
  }
  const [group, action, arg] = positionals
  const usage = (message: string) => {
    io.stderr(`service-server: ${message}\n${USAGE}`)
    return 2
  }

  let method = 'GET'
  let path: string
  let body: unknown
  if (group === 'approvals') {
    if (action === 'list' && !arg) path = '/approvals'
    else if ((action === 'allow' || action === 'deny') && arg) {
      method = 'POST'
      path = `/approvals/${encodeURIComponent(arg)}`
      body = { reply: action }
    } else return usage('approvals needs list, allow <id> or deny <id>')
  } else if (group === 'tokens') {
    if (action === 'list' && !arg) path = '/tokens'
    else if (action === 'create' && arg) {
      const ttl = values.ttl === undefined ? undefined : Number(values.ttl)
      if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 1))
        return usage('--ttl must be a whole number of seconds')
      method = 'POST'
      path = '/tokens'
      body = { scope: arg, ...(values.label ? { label: values.label } : {}), ...(ttl ? { ttlSeconds: ttl } : {}) }
    } else if (action === 'revoke' && arg) {
      method = 'DELETE'
      path = `/tokens/${encodeURIComponent(arg)}`
    } else return usage('tokens needs list, create <scope> or revoke <id>')
  } else {
    return usage(`unknown command ${group ?? ''}`)
  }

  const { baseUrl, hostToken } = resolveTarget(values, io)
  if (!hostToken) {
    io.stderr(
      'service-server: no host token; pass --host-token, set SERVICE_HOST_TOKEN, or run on the host that owns the config',
    )
    return 2
  }
  let response: Response
  try {
    response = await (io.fetch ?? fetch)(`${baseUrl}${path}`, {
      method,
      headers: { [HOST_TOKEN_HEADER]: hostToken, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
  } catch (error) {
    io.stderr(`service-server: cannot reach ${baseUrl}: ${(error as Error).message}`)
    return 1
  }
  const result = (await response.json().catch(() => ({}))) as Record<string, unknown>
  if (!response.ok) {
    io.stderr(
      `service-server: ${response.status} ${String(result.code ?? 'error')}: ${String(result.message ?? response.statusText)}`,
    )
    return 1
  }
  if (values.json) {
    io.stdout(JSON.stringify(result, null, 2))
    return 0
  }
  printResult(group, action!, result, io)
  return 0
}

function printResult(group: string, action: string, result: Record<string, unknown>, io: HostCliIo): void {
  const items = Array.isArray(result.items) ? (result.items as Array<Record<string, unknown>>) : []
  if (group === 'approvals' && action === 'list') {
    if (!items.length) io.stdout('no pending approvals')
    for (const a of items) io.stdout(`${a.id}  ${a.workspaceId}  ${a.action}  ${a.summary}  (${time(a.createdAt)})`)
  } else if (group === 'approvals') {
    io.stdout(result.allowed ? 'allowed' : 'denied')
  } else if (action === 'list') {
    if (!items.length) io.stdout('no issued tokens')
    for (const t of items)
      io.stdout(
        `${t.id}  ${t.scope}  ${t.label ?? '-'}  created ${time(t.createdAt)}  expires ${time(t.expiresAt)}  last used ${time(t.lastUsedAt)}`,
      )
  } else if (action === 'create') {
    io.stdout(
      `id: ${result.id}\nscope: ${result.scope}\nexpires: ${time(result.expiresAt)}\ntoken (shown once): ${result.token}`,
    )
  } else {
    io.stdout('revoked')
  }
}
