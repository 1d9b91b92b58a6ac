/**
 * Test support for the sidecar suites: a workspace server built in-process from a real config file
 * in a temp dir, with one token per scope and a request helper. Not a test file itself.
 * @module
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startFakeSidecar, type FakeSidecar } from '../../../fixtures/fake-sidecar/fake-sidecar.ts'
import { request, tempDir } from '../../../tests/harness.ts'
import { createLogger, type Logger } from '../../core/logger.ts'
import { createWorkspaceApp, type WorkspaceSurface } from '../app.ts'
import { loadWorkspaceConfig } from '../config/server-config.ts'

export const KIT_CLIENT_TOKEN = 'sidecar-kit-client-token-0123456789'
export const KIT_HOST_TOKEN = 'sidecar-kit-host-token-0123456789ab'

/** Options for {@link startSidecarApp}. */
export interface SidecarAppOptions {
  /** Extra keys per workspace entry (one workspace is created per element). */
  workspaces?: Array<Record<string, unknown>>
  /** Extra top-level config keys (e.g. `sidecar`). */
  file?: Record<string, unknown>
  readOnly?: boolean
  env?: Record<string, string>
  /** Collect log lines (JSON) here. */
  logLines?: string[]
}

/** A running in-process server with a token per scope. */
export interface SidecarApp {
  app: WorkspaceSurface
  dir: string
  wsIds: string[]
  roots: string[]
  tokens: { viewer: string; collaborator: string; owner: string }
  log: Logger
  req(
    path: string,
    init?: RequestInit & { json?: unknown; as?: 'viewer' | 'collaborator' | 'owner' | 'none' },
  ): Promise<Response>
  dispose(): Promise<void>
}

/** Builds the server over fresh temp workspaces. */
export async function startSidecarApp(options: SidecarAppOptions = {}): Promise<SidecarApp> {
  const dir = tempDir('svc-sidecar-').path
  try {
    const entries = options.workspaces ?? [{}]
    const roots = entries.map((_, i) => {
      const root = join(dir, `ws${i}`)
      mkdirSync(root)
      return root
    })
    const configPath = join(dir, 'server.json')
    writeFileSync(
      configPath,
      JSON.stringify(
        {
          token: KIT_CLIENT_TOKEN,
          hostToken: KIT_HOST_TOKEN,
          workspaces: entries.map((extra, i) => ({ path: roots[i], ...extra })),
          approval: { mode: 'auto' },
          readOnly: options.readOnly ?? false,
          dataDir: join(dir, 'data'),
          logRequests: options.logLines !== undefined,
          authThrottle: { maxFailures: 10_000 },
          ...options.file,
        },
        null,
        2,
      ),
    )
    const config = loadWorkspaceConfig({ config: configPath }, { HOME: dir, ...options.env }, dir)
    const lines = options.logLines
    const log = createLogger({
      format: 'json',
      write: (line) => {
        lines?.push(line)
      },
      level: lines ? 'info' : 'error',
    })
    const app = await createWorkspaceApp(config, { logger: log, watch: false })
    const viewer = (await app.services.tokens.create({ scope: 'viewer', label: 'kit viewer' })).token
    const owner = (await app.services.tokens.create({ scope: 'owner', label: 'kit owner' })).token
    const tokens = { viewer, collaborator: KIT_CLIENT_TOKEN, owner }
    return {
      app,
      dir,
      wsIds: config.workspaces.map((w) => w.id),
      roots: config.workspaces.map((w) => w.path),
      tokens,
      log,
      req(path, init = {}) {
        const headers = new Headers(init.headers)
        const as = init.as ?? 'collaborator'
        if (as !== 'none' && !headers.has('authorization')) headers.set('authorization', `Bearer ${tokens[as]}`)
        return request(app.fetch, path, { ...init, headers })
      },
      async dispose() {
        await app.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/** The fake-upstream fixture both proxy suites share: one fake and six workspaces over it. */
export interface ProxyFixture {
  fake: FakeSidecar
  kit: SidecarApp
  /** Request log lines (JSON). */
  lines: string[]
  close(): Promise<void>
}

/** Password the fixture's fake sidecar requires. */
export const FIXTURE_PASSWORD = 'fake-sidecar-password-1'

/**
 * Workspaces: 0 and 1 share the fake (sessions `ses_own` in 0, `ses_foreign` in 1), 2 pins a
 * non-ASCII directory, 3 has no sidecar, 4 points at a closed port, 5 has a wrong password.
 * Short timeouts so failure paths are quick.
 */
export async function startProxyFixture(): Promise<ProxyFixture> {
  const fake = await startFakeSidecar({ password: FIXTURE_PASSWORD })
  const dead = await startFakeSidecar()
  const deadUrl = dead.url
  await dead.close()
  const lines: string[] = []
  const own = { baseUrl: fake.url, password: FIXTURE_PASSWORD }
  const kit = await startSidecarApp({
    workspaces: [
      { sidecar: own },
      { sidecar: own },
      { sidecar: { ...own, directory: '/tmp/répertoire spécial' } },
      {},
      { sidecar: { baseUrl: deadUrl } },
      { sidecar: { baseUrl: fake.url, password: 'wrong-password' } },
    ],
    file: {
      sidecar: {
        heartbeatMs: 300,
        eventEstablishTimeoutMs: 1000,
        responseTimeoutMs: 1500,
        bodyIdleTimeoutMs: 500,
        reloadTimeoutMs: 500,
      },
    },
    logLines: lines,
  })
  fake.options = { ...fake.options, sessions: { ses_own: kit.roots[0]!, ses_foreign: kit.roots[1]! } }
  return {
    fake,
    kit,
    lines,
    close: async () => {
      await kit.dispose()
      await fake.close()
    },
  }
}

/** Polls `check` every 20 ms until it holds, or throws after `timeoutMs`. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
