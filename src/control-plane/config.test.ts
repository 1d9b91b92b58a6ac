import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { ConfigError } from '../core/settings.ts'
import { loadControlPlaneConfig } from './config.ts'

const test = suite('control-plane/config')

test('identity settings default to closed sign-up, 7-day sessions, no proxy trust and 5/50 failures per 15 minutes', () => {
  const config = loadControlPlaneConfig({}, {}, '/tmp')
  assert.equal([config.openSignUp, config.sessionTtlHours, config.trustProxy], [false, 168, false])
  assert.equal(config.signInThrottle, { maxFailuresPerAccount: 5, maxFailuresPerAddress: 50, windowSeconds: 900 })
})

test('environment variables override the file, and the file overrides defaults', async () => {
  await withTempDir((dir) => {
    const path = join(dir, 'cp.json')
    writeFileSync(
      path,
      JSON.stringify({
        openSignUp: true,
        sessionTtlHours: 12,
        trustProxy: true,
        signInThrottle: { maxFailuresPerAccount: 3 },
      }),
    )
    const fromFile = loadControlPlaneConfig({ config: path }, {}, dir)
    assert.equal(
      [
        fromFile.openSignUp,
        fromFile.sessionTtlHours,
        fromFile.trustProxy,
        fromFile.signInThrottle.maxFailuresPerAccount,
        fromFile.signInThrottle.windowSeconds,
      ],
      [true, 12, true, 3, 900],
    )
    const fromEnv = loadControlPlaneConfig(
      { config: path },
      { SERVICE_OPEN_SIGN_UP: 'false', SERVICE_SESSION_TTL_HOURS: '2', SERVICE_TRUST_PROXY: 'no' },
      dir,
    )
    assert.equal([fromEnv.openSignUp, fromEnv.sessionTtlHours, fromEnv.trustProxy], [false, 2, false])
  })
})

test('bad identity settings stop start-up with a ConfigError naming the source', async () => {
  await withTempDir((dir) => {
    const path = join(dir, 'cp.json')
    writeFileSync(path, JSON.stringify({ signInThrottle: { maxFailuresPerAccount: 0 } }))
    assert.throws(
      () => loadControlPlaneConfig({ config: path }, {}, dir),
      (e: unknown) => e instanceof ConfigError,
    )
    assert.throws(
      () => loadControlPlaneConfig({}, { SERVICE_SESSION_TTL_HOURS: 'forever' }, dir),
      (e: unknown) => e instanceof ConfigError && /SERVICE_SESSION_TTL_HOURS/.test((e as Error).message),
    )
    assert.throws(
      () => loadControlPlaneConfig({}, { SERVICE_OPEN_SIGN_UP: 'maybe' }, dir),
      (e: unknown) => e instanceof ConfigError,
    )
  })
})

test.run()
