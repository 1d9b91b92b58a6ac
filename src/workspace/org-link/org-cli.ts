/**
 * The host's organization commands against a running workspace server:
 * `service-server org link <control-plane-url> [--workspace <id>]` starts the device flow, prints
 * the code and where to approve it, and waits until the workspace is linked (or the code is
 * denied or expires); `org status|sync|unlink [--remove]` read, reconcile and unlink. Like the
 * other host commands it finds the server and the host token through `resolveTarget`. The
 * organization's token never passes through this command: the server keeps it.
 * @module
 */
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { defaultConfigDir } from '../../core/settings.ts'
import { HOST_TOKEN_HEADER } from '../access/auth.ts'
import { type HostCliIo, resolveTarget } from '../access/host-cli.ts'

/** The `org` subcommands this module handles (`org token` is the control plane's client command). */
export const ORG_LINK_COMMANDS = ['link', 'status', 'sync', 'unlink'] as const

const USAGE = [
  'Usage:',
  '  service-server org link <control-plane-url> [--workspace <id>] [--url <base>] [--host-token <t>] [--config <path>]',
  '  service-server org status|sync|unlink [--remove] [--workspace <id>] [--url <base>] [--host-token <t>] [--json]',
].join('\n')

/** How long `org link` waits for the approval at most (the code's own expiry usually ends it first). */
const MAX_WAIT_MS = 30 * 60_000

/** Runs an `org` command; returns the exit code (0 ok, 1 failed, 2 usage). */
export async function runOrgCli(
  argv: string[],
  io: HostCliIo & { sleep?: (ms: number) => Promise<void>; pollMs?: number },
): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv.slice(1),
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string' },
        'host-token': { type: 'string' },
        config: { type: 'string' },
        workspace: { type: 'string' },
        remove: { type: 'boolean' },
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
  const [action, target, extra] = positionals
  const usage = (message: string) => {
    io.stderr(`service-server: ${message}\n${USAGE}`)
    return 2
  }
  if (!(ORG_LINK_COMMANDS as readonly string[]).includes(action ?? ''))
    return usage(`unknown org command ${action ?? ''}`)
  if (action === 'link' ? !target || extra : target) return usage(`org ${action}: wrong arguments`)
  const { baseUrl, hostToken } = resolveTarget(values, io)
  if (!hostToken) {
    io.stderr(
      'service-server: no host token; pass --host-token, set SERVICE_HOST_TOKEN, or run on the host that owns the config',
    )
    return 2
  }
  const call = async (method: string, path: string, body?: unknown, bearer?: string) => {
    const response = await (io.fetch ?? fetch)(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(bearer ? { authorization: `Bearer ${bearer}` } : { [HOST_TOKEN_HEADER]: hostToken }),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    })
    return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> }
  }
  const failed = (r: { status: number; body: Record<string, unknown> }) => {
    io.stderr(`service-server: ${r.status} ${String(r.body.code ?? 'error')}: ${String(r.body.message ?? '')}`)
    return 1
  }
  try {
    let workspaceId = values.workspace
    if (!workspaceId) {
      // Listing workspaces is a client route: the first workspace is found with the client token.
      const clientToken = resolveClientToken(values, io)
      if (!clientToken) {
        io.stderr(
          'service-server: pass --workspace <id> (or set SERVICE_TOKEN so the first workspace can be looked up)',
        )
        return 2
      }
      const list = await call('GET', '/workspaces', undefined, clientToken)
      if (list.status !== 200) return failed(list)
      const items = (list.body.items ?? list.body.workspaces) as Array<{ id: string }> | undefined
      workspaceId = items?.[0]?.id
      if (!workspaceId) {
        io.stderr('service-server: the server has no workspace')
        return 1
      }
    }
    const base = `/workspace/${encodeURIComponent(workspaceId)}/org`
    if (action === 'link') {
      const started = await call('POST', `${base}/link`, { controlPlaneUrl: target })
      if (started.status !== 202) return failed(started)
      io.stderr(`To link workspace ${workspaceId}, open ${started.body.verificationUriComplete}`)
      io.stderr(`or go to ${started.body.verificationUri} and enter the code: ${started.body.userCode}`)
      io.stderr('Waiting for approval…')
      const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
      const deadline = Date.now() + MAX_WAIT_MS
      while (Date.now() < deadline) {
        await sleep(io.pollMs ?? 2000)
        const status = await call('GET', base)
        if (status.status === 404) return failed(status)
        if (status.status !== 200) continue
        if (status.body.state === 'linking') continue
        const org = status.body.organization as { name?: string } | null
        io.stdout(`linked to ${org?.name ?? target} (${String(status.body.state)})`)
        return 0
      }
      io.stderr('service-server: gave up waiting for the approval')
      return 1
    }
    const result =
      action === 'status'
        ? await call('GET', base)
        : action === 'sync'
          ? await call('POST', `${base}/sync`)
          : await call('DELETE', `${base}${values.remove ? '?remove=true' : ''}`)
    if (result.status !== 200) return failed(result)
    if (values.json) io.stdout(JSON.stringify(result.body, null, 2))
    else if (action === 'unlink')
      io.stdout(`unlinked${values.remove ? `; removed ${String(result.body.removed)} file(s)` : ''}`)
    else printStatus(result.body, io)
    return 0
  } catch (error) {
    io.stderr(`service-server: cannot reach ${baseUrl}: ${(error as Error).message}`)
    return 1
  }
}

/** The client token: `SERVICE_TOKEN`, else the config file's `token`, else the generated credentials file's. */
function resolveClientToken(values: { config?: string }, io: Pick<HostCliIo, 'env' | 'cwd'>): string | undefined {
  if (io.env.SERVICE_TOKEN) return io.env.SERVICE_TOKEN
  const configPath = resolve(
    io.cwd,
    values.config ?? io.env.SERVICE_SERVER_CONFIG ?? join(defaultConfigDir(io.env), 'server.json'),
  )
  for (const path of [configPath, join(dirname(configPath), 'credentials.json')]) {
    try {
      const value = JSON.parse(readFileSync(path, 'utf8')) as { token?: unknown }
      if (typeof value.token === 'string' && value.token) return value.token
    } catch {
      // not there or not JSON: try the next
    }
  }
  return undefined
}

function printStatus(view: Record<string, unknown>, io: HostCliIo): void {
  const org = view.organization as { name?: string } | null
  io.stdout(`${org?.name ?? '-'}  ${String(view.controlPlaneUrl)}  ${String(view.state)}`)
  const error = view.lastError as { message?: string } | null
  if (error?.message) io.stdout(`last error: ${error.message}`)
  for (const item of (view.delivered as Array<Record<string, unknown>>) ?? [])
    io.stdout(`  ${String(item.type)} ${String(item.name)}  ${String(item.versionId)}`)
  for (const c of (view.conflicts as Array<Record<string, unknown>>) ?? [])
    io.stdout(`  conflict ${String(c.path)} (${String(c.reason)})`)
}
