/**
 * A real control plane for tests: a SQLite file in a temp directory, a movable clock, a cheap
 * password KDF (the default cost makes each sign-up take tens of milliseconds) and a contract
 * client. Always `close()` in `finally`.
 * @module
 */
import { join } from 'node:path'
import { silentLogger } from '../../core/logger.ts'
import { tempDir } from '../../../tests/harness.ts'
import { createControlPlaneApp, type ControlPlaneApp } from '../app.ts'
import { loadControlPlaneConfig, type ControlPlaneConfig } from '../config.ts'
import { contractClient, type ContractClient } from './contract-client.ts'
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from './test-database.ts'

/** Overrides for the test configuration. */
export interface TestControlPlaneOptions {
  /** Default true in tests so fixtures can create several accounts; sign-up tests turn it off. */
  openSignUp?: boolean
  sessionTtlHours?: number
  signInThrottle?: Partial<ControlPlaneConfig['signInThrottle']>
  trustProxy?: boolean
  /** Start time of the clock (epoch ms); default now. */
  startAt?: number
  /** Config file keys (e.g. `oauth`). */
  file?: Partial<ControlPlaneConfig['file']>
  /** A second instance on the same database (and encryption key) as this running plane. */
  sameDatabaseAs?: TestControlPlane
  /** MCP endpoint limits (config file key `mcp`). */
  mcp?: ControlPlaneConfig['file']['mcp']
}

/** A running test control plane. */
export interface TestControlPlane {
  app: ControlPlaneApp
  client: ContractClient
  dir: string
  databasePath: string
  /** The PostgreSQL URL in the PostgreSQL pass, else null. */
  databaseUrl: string | null
  clock: { now(): number; advance(ms: number): void }
  close(): Promise<void>
}

/** Starts a control plane on a fresh temp database. */
export async function startTestControlPlane(options: TestControlPlaneOptions = {}): Promise<TestControlPlane> {
  const dir = tempDir('svc-cp-')
  let time = options.startAt ?? Date.now()
  const clock = {
    now: () => time,
    advance: (ms: number) => {
      time += ms
    },
  }
  const base = loadControlPlaneConfig({}, {}, dir.path)
  const config: ControlPlaneConfig = {
    ...base,
    dataDir: dir.path,
    databasePath: options.sameDatabaseAs?.databasePath ?? join(dir.path, 'control-plane.sqlite'),
    databaseUrl: options.sameDatabaseAs?.databaseUrl ?? null,
    encryptionKeyFile: join(options.sameDatabaseAs?.dir ?? dir.path, 'encryption.key'),
    logRequests: false,
    openSignUp: options.openSignUp ?? true,
    sessionTtlHours: options.sessionTtlHours ?? base.sessionTtlHours,
    trustProxy: options.trustProxy ?? false,
    signInThrottle: { ...base.signInThrottle, ...options.signInThrottle },
    file: { ...base.file, ...options.file },
  }
  // A plane sharing another's database leaves creating and dropping it to that plane.
  const postgres = TEST_ENGINE === 'postgres' && !options.sameDatabaseAs
  try {
    if (postgres) config.databaseUrl = await testDatabaseUrl(dir.path)
    const app = await createControlPlaneApp(config, {
      logger: silentLogger,
      now: clock.now,
      scrypt: { N: 2 ** 10, r: 8, p: 1 },
    })
    return {
      app,
      client: contractClient(app),
      dir: dir.path,
      databasePath: config.databasePath,
      databaseUrl: config.databaseUrl,
      clock,
      async close() {
        await app.close()
        if (postgres) await dropTestDatabase(dir.path)
        dir.remove()
      },
    }
  } catch (error) {
    if (postgres) await dropTestDatabase(dir.path).catch(() => {})
    dir.remove()
    throw error
  }
}
