/**
 * Test kit for the asynchronous families: a control plane on a temp database with the real
 * clock (jobs and sweeps need time to pass), fast windows from the `jobs`/`workers`/`connectors`
 * config keys, optionally listening on a loopback port so Worker runtimes can reach it, and a
 * contract client. Always `close()` in `finally`.
 * @module
 */
import { join } from 'node:path'
import { silentLogger } from '../../core/logger.ts'
import { serve, type Listener } from '../../serve.ts'
import { tempDir } from '../../../tests/harness.ts'
import { createControlPlaneApp, type ControlPlaneApp } from '../app.ts'
import { loadControlPlaneConfig, type ControlPlaneConfig } from '../config.ts'
import { contractClient, type ContractClient } from './contract-client.ts'
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from './test-database.ts'
import type { AsyncFileKeys } from '../jobs/async-settings.ts'

/** Fast defaults for tests. */
export const FAST_ASYNC: Required<AsyncFileKeys> = {
  jobs: { pollIntervalMs: 25, leaseMs: 1000, retryBaseMs: 40, retryCapMs: 400, concurrency: 2, stopGraceMs: 200 },
  workers: { heartbeatIntervalMs: 150, staleAfterMs: 800, provisioningDeadlineMs: 15_000, sweepIntervalMs: 50 },
  connectors: { allowFileUrls: true, maxAttempts: 3, syncDeadlineMs: 30_000, discoveryDeadlineMs: 30_000 },
}

/** A running control plane for asynchronous-family tests. */
export interface AsyncTestPlane {
  app: ControlPlaneApp
  client: ContractClient
  dir: string
  /** Base URL when started with `listen: true`. */
  url: string | null
  close(): Promise<void>
}

/** Starts a control plane; `file` keys override {@link FAST_ASYNC} per family. */
export async function startAsyncTestPlane(
  options: { file?: AsyncFileKeys; listen?: boolean; dir?: string } = {},
): Promise<AsyncTestPlane> {
  const own = options.dir ? null : tempDir('svc-cp-async-')
  const dir = options.dir ?? own!.path
  const base = loadControlPlaneConfig({}, {}, dir)
  const file = {
    jobs: { ...FAST_ASYNC.jobs, ...options.file?.jobs },
    workers: { ...FAST_ASYNC.workers, ...options.file?.workers },
    connectors: { ...FAST_ASYNC.connectors, ...options.file?.connectors },
  }
  const config: ControlPlaneConfig = {
    ...base,
    dataDir: join(dir, 'data'),
    databasePath: join(dir, 'control-plane.sqlite'),
    logRequests: false,
    openSignUp: true,
    file: { ...base.file, ...file },
  }
  let app: ControlPlaneApp | undefined
  let listener: Listener | undefined
  const postgres = TEST_ENGINE === 'postgres'
  try {
    if (postgres) config.databaseUrl = await testDatabaseUrl(dir)
    app = await createControlPlaneApp(config, { logger: silentLogger, scrypt: { N: 2 ** 10, r: 8, p: 1 } })
    let url: string | null = null
    if (options.listen) {
      listener = await serve({ host: '127.0.0.1', port: 0, fetch: app.fetch })
      app.onListening?.({ host: '127.0.0.1', port: listener.port })
      url = `http://127.0.0.1:${listener.port}`
    }
    const started = app
    return {
      app: started,
      client: contractClient(started),
      dir,
      url,
      async close() {
        await listener?.stop()
        await started.close()
        if (postgres && own) await dropTestDatabase(dir)
        own?.remove()
      },
    }
  } catch (error) {
    await listener?.stop()
    await app?.close()
    own?.remove()
    throw error
  }
}

/** Polls `read` until `done(value)` or the timeout; returns the last value. */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let value = await read()
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, everyMs))
    value = await read()
  }
  return value
}
