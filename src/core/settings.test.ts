/**
 * No credential value in any start-up error or `--help` output: bad values are named, never quoted.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import * as v from 'valibot'
import { assert, suite, withTempDir } from '../../tests/harness.ts'
import { main } from '../main.ts'
import { ConfigError, envValue, flagValue, readConfigFile } from './settings.ts'

const test = suite('core/settings secrets', { timeoutMs: 30_000 })

const SHORT_TOKEN = 'tok-Zq81'
const URL_PASSWORD = 'pw-Vx9Lk2'

/** Runs main() to completion and returns everything it printed. */
async function runMain(
  argv: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number; out: string }> {
  let out = ''
  const code = await main(argv, {
    env: { HOME: cwd, XDG_CONFIG_HOME: join(cwd, 'cfg'), XDG_DATA_HOME: join(cwd, 'data'), ...env },
    cwd,
    stdout: (line) => {
      out += `${line}\n`
    },
    stderr: (line) => {
      out += `${line}\n`
    },
    stopSignal: Promise.resolve('SIGTERM'),
  })
  return { code, out }
}

const errorOf = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof ConfigError)
    return (error as Error).message
  }
  throw new Error('expected a ConfigError')
}

test('an invalid SERVICE_TOKEN stops start-up with exit 2 and is not echoed', async () => {
  await withTempDir(async (dir) => {
    const { code, out } = await runMain(['--port', '0', '--workspace', dir], { SERVICE_TOKEN: SHORT_TOKEN }, dir)
    assert.is(code, 2)
    assert.match(out, /SERVICE_TOKEN/)
    assert.not.match(out, new RegExp(SHORT_TOKEN))
  })
})

test('a token in a broken config file, a flag or a URL password never reaches the message', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'server.json')
    writeFileSync(file, `{"token": ${SHORT_TOKEN}}`)
    assert.not.match(
      errorOf(() => readConfigFile(file, v.object({}))),
      new RegExp(SHORT_TOKEN),
    )
  })
  const url = `postgres://svc:${URL_PASSWORD}@127.0.0.1:5432/db`
  const urlMessage = errorOf(() =>
    envValue({ SERVICE_SIDECAR_URL: url }, 'SERVICE_SIDECAR_URL', v.pipe(v.string(), v.regex(/^x/))),
  )
  assert.not.match(urlMessage, new RegExp(URL_PASSWORD))
  const flagMessage = errorOf(() =>
    flagValue(
      { token: SHORT_TOKEN },
      'token',
      v.pipe(
        v.string(),
        v.length(99, (i) => `bad ${i.input as string}`),
      ),
    ),
  )
  assert.not.match(flagMessage, new RegExp(SHORT_TOKEN))
  // A setting that is not a credential still says what it got, which is what makes it useful.
  assert.match(
    errorOf(() => envValue({ SERVICE_PORT: 'abc' }, 'SERVICE_PORT', v.pipe(v.string(), v.regex(/^\d+$/)))),
    /abc/,
  )
})

test('--help prints no credential value from the environment', async () => {
  await withTempDir(async (dir) => {
    const env = { SERVICE_TOKEN: 'help-client-token-0123456789', SERVICE_HOST_TOKEN: 'help-host-token-0123456789' }
    const { code, out } = await runMain(['--help'], env, dir)
    assert.is(code, 0)
    for (const value of Object.values(env)) assert.not.ok(out.includes(value), 'a token value is in --help')
  })
})

test.run()
