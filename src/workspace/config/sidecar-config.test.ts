import { ConfigError } from '../../core/settings.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { resolveSidecarConfig, SIDECAR_DEFAULTS } from './sidecar-config.ts'

const cfg = suite('workspace/sidecar config')
const ws = (id: string, raw: Record<string, unknown> = {}) => ({
  id,
  path: `/work/${id}`,
  raw: { path: `/work/${id}`, ...raw },
})
const resolve = (file: Record<string, unknown>, workspaces = [ws('a')], env: Record<string, string> = {}) =>
  resolveSidecarConfig(file, workspaces, env, 'server.json', '/etc/service')

cfg('no sidecar anywhere means no targets and default tuning', () => {
  const out = resolve({})
  assert.is(out.targets.size, 0)
  assert.is(out.managed, null)
  assert.equal(out.tuning, SIDECAR_DEFAULTS)
  assert.is(out.tuning.reloadOnExtensionChange, false)
})

cfg('a per-workspace sidecar wins over the top-level default; the directory defaults to the workspace path', () => {
  const out = resolve({ sidecar: { baseUrl: 'http://127.0.0.1:4096/', password: 'top-pass' } }, [
    ws('a', { sidecar: { baseUrl: 'http://10.0.0.2:5000', username: 'u', password: 'own-pass', directory: 'sub' } }),
    ws('b'),
  ])
  assert.equal(out.targets.get('a'), {
    baseUrl: 'http://10.0.0.2:5000',
    username: 'u',
    password: 'own-pass',
    directory: '/etc/service/sub',
    managed: false,
  })
  assert.equal(out.targets.get('b'), {
    baseUrl: 'http://127.0.0.1:4096',
    username: 'opencode',
    password: 'top-pass',
    directory: '/work/b',
    managed: false,
  })
})

cfg('a workspace with its own URL never receives the default password', () => {
  const out = resolve({ sidecar: { baseUrl: 'http://127.0.0.1:4096', password: 'top-pass' } }, [
    ws('a', { sidecar: { baseUrl: 'http://other:1' } }),
  ])
  assert.is(out.targets.get('a')!.password, null)
})

cfg(
  'the reference keys work: opencodeBaseUrl/opencodePassword at top level, baseUrl/directory/opencodePassword per workspace',
  () => {
    const top = resolve({
      opencodeBaseUrl: 'http://127.0.0.1:4096',
      opencodeUsername: 'me',
      opencodePassword: 'p',
      opencodeDirectory: '/proj',
    })
    assert.equal(top.targets.get('a'), {
      baseUrl: 'http://127.0.0.1:4096',
      username: 'me',
      password: 'p',
      directory: '/proj',
      managed: false,
    })
    const flat = resolve({}, [ws('a', { baseUrl: 'http://h:1', directory: '/d', opencodePassword: 'q' })])
    assert.equal(flat.targets.get('a'), {
      baseUrl: 'http://h:1',
      username: 'opencode',
      password: 'q',
      directory: '/d',
      managed: false,
    })
  },
)

cfg('a top-level directory applies only when there is exactly one workspace', () => {
  const two = resolve({ sidecar: { baseUrl: 'http://h:1', directory: '/shared' } }, [ws('a'), ws('b')])
  assert.equal([two.targets.get('a')!.directory, two.targets.get('b')!.directory], ['/work/a', '/work/b'])
})

cfg('credentials in the URL move to the Basic header settings', () => {
  const out = resolve({ sidecar: { baseUrl: 'http://user:p%40ss@127.0.0.1:4096' } })
  assert.equal(
    [out.targets.get('a')!.baseUrl, out.targets.get('a')!.username, out.targets.get('a')!.password],
    ['http://127.0.0.1:4096', 'user', 'p@ss'],
  )
})

cfg('environment variables override the file default and tuning', () => {
  const out = resolve({ sidecar: { baseUrl: 'http://file:1', heartbeatMs: 5000 } }, [ws('a')], {
    SERVICE_SIDECAR_URL: 'http://env:2',
    SERVICE_SIDECAR_PASSWORD: 'envpw',
    SERVICE_SIDECAR_HEARTBEAT_MS: '700',
    SERVICE_SIDECAR_RELOAD_ON_EXTENSION_CHANGE: 'true',
  })
  assert.equal(
    [
      out.targets.get('a')!.baseUrl,
      out.targets.get('a')!.password,
      out.tuning.heartbeatMs,
      out.tuning.reloadOnExtensionChange,
    ],
    ['http://env:2', 'envpw', 700, true],
  )
})

cfg('naming a binary without a URL makes every workspace use the managed sidecar', () => {
  const out = resolve({ sidecar: { bin: 'opencode', args: ['--print-logs'], env: { X: '1' } } }, [
    ws('a'),
    ws('b', { sidecar: { baseUrl: 'http://own:1' } }),
  ])
  assert.equal(out.managed, { bin: 'opencode', args: ['--print-logs'], env: { X: '1' }, startTimeoutMs: 30_000 })
  assert.equal([out.targets.get('a')!.managed, out.targets.get('a')!.baseUrl], [true, null])
  assert.equal([out.targets.get('b')!.managed, out.targets.get('b')!.baseUrl], [false, 'http://own:1'])
})

cfg('invalid values stop start-up naming the key', () => {
  const error = (fn: () => unknown) => {
    try {
      fn()
    } catch (e) {
      return e as ConfigError
    }
    throw new Error('no error')
  }
  assert.match(error(() => resolve({ sidecar: { baseUrl: 'ftp://x' } })).message, /sidecar\.baseUrl/)
  assert.match(
    error(() => resolve({}, [ws('a', { sidecar: { baseUrl: 'http://h:1', password: 3 } })])).message,
    /workspaces\[0\]\.sidecar\.password/,
  )
  assert.match(error(() => resolve({ sidecar: { heartbeatMs: 10 } })).message, /heartbeatMs/)
  assert.match(error(() => resolve({ sidecar: 'http://h:1' })).message, /sidecar/)
  assert.ok(error(() => resolve({}, [ws('a')], { SERVICE_SIDECAR_URL: 'nope' })) instanceof ConfigError)
})

cfg.run()
