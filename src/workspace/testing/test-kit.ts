/**
 * Test support for workspace suites: a copy of `fixtures/workspace-basic/` in a temp dir, a
 * config file written the way a host would, the app built in-process, a movable clock, and
 * request helpers carrying the two configured tokens. Not a test file itself.
 * @module
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { request, tempDir } from '../../../tests/harness.ts'
import { silentLogger } from '../../core/logger.ts'
import { createWorkspaceApp, type WorkspaceAppOptions, type WorkspaceSurface } from '../app.ts'
import { HOST_TOKEN_HEADER } from '../access/auth.ts'
import { loadWorkspaceConfig } from '../config/server-config.ts'

/** The fixture workspace every suite copies. */
export const FIXTURE = resolve(
  import.meta.dirname ?? new URL('.', import.meta.url).pathname,
  '../../../fixtures/workspace-basic',
)
export const CLIENT_TOKEN = 'test-client-token-0123456789'
export const HOST_TOKEN = 'test-host-token-0123456789ab'

/** Options for {@link startTestServer}. */
export interface TestServerOptions {
  approval?: 'manual' | 'auto'
  timeoutMs?: number
  readOnly?: boolean
  corsOrigins?: string[]
  authThrottle?: { maxFailures?: number; windowSeconds?: number; lockoutSeconds?: number }
  /** Copy the fixture (default) or start from an empty workspace. */
  fixture?: boolean
  watch?: boolean
  debounceMs?: number
  /** More config-file keys (e.g. `files`, `inbox`), merged over the defaults above. */
  extraConfig?: Record<string, unknown>
  /** More app options (organization-link timing, the environment, metrics). */
  app?: Pick<WorkspaceAppOptions, 'env' | 'orgLinkTiming' | 'metrics'>
}

/** Per-request extras: which credential to send. */
export type Init = RequestInit & { json?: unknown; token?: string; hostToken?: string }

/** A running in-process workspace server over temp dirs. */
export interface TestServer {
  app: WorkspaceSurface
  wsId: string
  root: string
  dir: string
  clock: { readonly now: number; advance(ms: number): void }
  req(path: string, init?: Init): Promise<Response>
  /** Closes this instance and starts a new one over the same directories (a restart). */
  restart(): Promise<TestServer>
  /** Closes the app and removes the temp dir. */
  dispose(): Promise<void>
}

async function build(
  dir: string,
  root: string,
  options: TestServerOptions,
  clock: TestServer['clock'],
): Promise<TestServer> {
  const configPath = join(dir, 'server.json')
  writeFileSync(
    configPath,
    JSON.stringify(
      {
        token: CLIENT_TOKEN,
        hostToken: HOST_TOKEN,
        workspaces: [{ path: root }],
        approval: { mode: options.approval ?? 'auto', timeoutMs: options.timeoutMs ?? 30_000 },
        corsOrigins: options.corsOrigins ?? [],
        readOnly: options.readOnly ?? false,
        dataDir: join(dir, 'data'),
        logRequests: false,
        authThrottle: options.authThrottle ?? { maxFailures: 10_000 },
        events: { debounceMs: options.debounceMs ?? 60 },
        ...options.extraConfig,
      },
      null,
      2,
    ),
  )
  const config = loadWorkspaceConfig({ config: configPath }, { HOME: dir }, dir)
  const app = await createWorkspaceApp(config, {
    logger: silentLogger,
    now: () => clock.now,
    watch: options.watch,
    ...options.app,
  })
  const server: TestServer = {
    app,
    wsId: config.workspaces[0]!.id,
    root,
    dir,
    clock,
    req(path, init = {}) {
      const headers = new Headers(init.headers)
      if (init.token) headers.set('authorization', `Bearer ${init.token}`)
      if (init.hostToken) headers.set(HOST_TOKEN_HEADER, init.hostToken)
      return request(app.fetch, path, { ...init, headers })
    },
    async restart() {
      await app.close()
      return build(dir, root, options, clock)
    },
    async dispose() {
      await app.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}

/** Starts a server over a fresh copy of the fixture. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = tempDir('svc-ws-').path
  const root = join(dir, 'workspace')
  if (options.fixture === false) mkdirSync(root)
  else cpSync(FIXTURE, root, { recursive: true })
  // Real time plus an offset tests can move forward (token expiry) without freezing time.
  let offset = 0
  const clock = {
    get now() {
      return Date.now() + offset
    },
    advance(ms: number) {
      offset += ms
    },
  }
  try {
    return await build(dir, root, options, clock)
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/** Waits until `check` passes or the deadline is reached. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 3000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
