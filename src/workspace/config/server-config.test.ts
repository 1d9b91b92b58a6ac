import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { ConfigError } from '../../core/settings.ts'
import { loadWorkspaceConfig, workspaceIdFor } from './server-config.ts'

const config = suite('workspace/server-config')

function configError(fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('expected a ConfigError')
}

config(
  'with no file the embedded default serves the current directory on 127.0.0.1:8787 with manual approval',
  async () => {
    await withTempDir((dir) => {
      const cfg = loadWorkspaceConfig({}, { HOME: dir }, dir)
      assert.is(cfg.configPath, join(dir, '.config/service/server.json'))
      assert.not.ok(cfg.configFileFound)
      assert.equal(
        [cfg.host, cfg.port, cfg.approval.mode, cfg.approval.timeoutMs, cfg.readOnly],
        ['127.0.0.1', 8787, 'manual', 30000, false],
      )
      assert.equal(cfg.corsOrigins, [])
      assert.is(cfg.workspaces.length, 1)
      assert.is(cfg.workspaces[0]!.path, dir)
      assert.is(cfg.workspaces[0]!.id, workspaceIdFor(dir))
      assert.match(cfg.workspaces[0]!.id, /^ws_[0-9a-f]{12}$/)
    })
  },
)

config('tokens are generated once, persisted with mode 0600 in the config directory, and reused', async () => {
  await withTempDir((dir) => {
    const first = loadWorkspaceConfig({}, { HOME: dir }, dir)
    assert.ok(first.generated.token && first.generated.hostToken)
    assert.is(first.tokenSource, 'generated')
    const stored = join(dir, '.config/service/credentials.json')
    assert.is(statSync(stored).mode & 0o777, 0o600)
    assert.equal(JSON.parse(readFileSync(stored, 'utf8')), { token: first.token, hostToken: first.hostToken })
    const second = loadWorkspaceConfig({}, { HOME: dir }, dir)
    assert.equal(second.generated, {})
    assert.equal([second.token, second.hostToken, second.tokenSource], [first.token, first.hostToken, 'stored'])
    assert.is.not(first.token, first.hostToken)
  })
})

config('each key resolves flag over env over file over default', async () => {
  await withTempDir((dir) => {
    const file = join(dir, 'server.json')
    writeFileSync(
      file,
      JSON.stringify({
        host: '127.0.0.2',
        port: 9001,
        approval: { mode: 'auto', timeoutMs: 5000 },
        corsOrigins: ['https://file.example'],
        token: 'file-token-0123456789',
        readOnly: true,
      }),
    )
    const fromFile = loadWorkspaceConfig({ config: file }, {}, dir)
    assert.equal(
      [
        fromFile.host,
        fromFile.port,
        fromFile.approval.mode,
        fromFile.approval.timeoutMs,
        fromFile.corsOrigins,
        fromFile.token,
        fromFile.readOnly,
      ],
      ['127.0.0.2', 9001, 'auto', 5000, ['https://file.example'], 'file-token-0123456789', true],
    )
    const env = {
      SERVICE_PORT: '9002',
      SERVICE_APPROVAL_MODE: 'manual',
      SERVICE_TOKEN: 'env-token-0123456789',
      SERVICE_CORS_ORIGINS: 'https://a.example, https://b.example',
      SERVICE_READ_ONLY: 'false',
    }
    const fromEnv = loadWorkspaceConfig({ config: file }, env, dir)
    assert.equal(
      [fromEnv.port, fromEnv.approval.mode, fromEnv.token, fromEnv.corsOrigins, fromEnv.readOnly, fromEnv.tokenSource],
      [9002, 'manual', 'env-token-0123456789', ['https://a.example', 'https://b.example'], false, 'env'],
    )
    const fromFlags = loadWorkspaceConfig(
      { config: file, port: '0', approval: 'auto', token: 'flag-token-0123456789', 'read-only': true },
      env,
      dir,
    )
    assert.equal(
      [fromFlags.port, fromFlags.approval.mode, fromFlags.token, fromFlags.readOnly],
      [0, 'auto', 'flag-token-0123456789', true],
    )
    assert.equal(fromFlags.generated.token, undefined, 'no client token is generated when one is configured')
  })
})

config('SERVICE_SERVER_CONFIG names the file when --config is absent', async () => {
  await withTempDir((dir) => {
    const file = join(dir, 'elsewhere.json')
    writeFileSync(file, JSON.stringify({ port: 7777 }))
    assert.is(loadWorkspaceConfig({}, { SERVICE_SERVER_CONFIG: file, HOME: dir }, dir).port, 7777)
  })
})

config(
  'a --config path that does not exist stops start-up; a missing default or SERVICE_SERVER_CONFIG file does not',
  async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'nowhere', 'server.json')
      const error = configError(() => loadWorkspaceConfig({ config: file }, { HOME: dir }, dir))
      assert.is(error.source, file)
      assert.match(error.message, /file does not exist \(named by --config\)/)
      assert.not.ok(existsSync(join(dir, 'nowhere')), 'nothing was created beside the missing path')
      const fromEnv = loadWorkspaceConfig({}, { HOME: dir, SERVICE_SERVER_CONFIG: file }, dir)
      assert.equal([fromEnv.configFileFound, fromEnv.configPath], [false, file])
    })
  },
)

config('an invalid file stops start-up naming the file, the key and the problem', async () => {
  await withTempDir((dir) => {
    const file = join(dir, 'server.json')
    writeFileSync(file, '{"port": 8787, "approval": {"mode": "sometimes"}}')
    const error = configError(() => loadWorkspaceConfig({ config: file }, {}, dir))
    assert.is(error.source, file)
    assert.is(error.key, 'approval.mode')
    assert.match(error.message, /manual.*auto/)
    writeFileSync(file, '{not json')
    assert.match(configError(() => loadWorkspaceConfig({ config: file }, {}, dir)).message, /not valid JSON/)
    writeFileSync(file, '[]')
    assert.match(configError(() => loadWorkspaceConfig({ config: file }, {}, dir)).message, /JSON object/)
    writeFileSync(file, JSON.stringify({ workspaces: [{ path: 'missing-dir' }] }))
    const missing = configError(() => loadWorkspaceConfig({ config: file }, {}, dir))
    assert.is(missing.key, 'workspaces[0].path')
    assert.match(missing.message, /does not exist/)
  })
})

config('bad environment values and flags are named', async () => {
  await withTempDir((dir) => {
    assert.match(
      configError(() => loadWorkspaceConfig({}, { HOME: dir, SERVICE_PORT: 'eighty' }, dir)).message,
      /SERVICE_PORT/,
    )
    assert.match(
      configError(() => loadWorkspaceConfig({ approval: 'maybe' }, { HOME: dir }, dir)).message,
      /--approval/,
    )
    assert.match(
      configError(() => loadWorkspaceConfig({ cors: 'not-an-origin' }, { HOME: dir }, dir)).message,
      /not-an-origin/,
    )
  })
})

config(
  'a reference config file works once moved: relative paths resolve against its directory, ids are kept',
  async () => {
    await withTempDir((dir) => {
      mkdirSync(join(dir, 'conf/projects/alpha'), { recursive: true })
      mkdirSync(join(dir, 'real-beta'))
      symlinkSync(join(dir, 'real-beta'), join(dir, 'conf/beta-link'))
      const file = join(dir, 'conf/server.json')
      writeFileSync(
        file,
        JSON.stringify({
          workspaces: [
            { path: 'projects/alpha', name: 'Alpha' },
            { path: 'beta-link', id: 'beta' },
          ],
          authorizedRoots: ['x'],
          opencodeBaseUrl: 'http://127.0.0.1:4096',
        }),
      )
      const cfg = loadWorkspaceConfig({ config: file }, {}, dir)
      assert.equal(
        cfg.workspaces.map((w) => [w.id, w.name, w.path]),
        [
          [workspaceIdFor(join(dir, 'conf/projects/alpha')), 'Alpha', join(dir, 'conf/projects/alpha')],
          ['beta', 'real-beta', join(dir, 'real-beta')],
        ],
      )
      assert.equal(cfg.unknownKeys, [])
      assert.is(cfg.credentialsPath, join(dir, 'conf/credentials.json'))
    })
  },
)

config('a workspace list from flags replaces the file list as a whole', async () => {
  await withTempDir((dir) => {
    mkdirSync(join(dir, 'a'))
    mkdirSync(join(dir, 'b'))
    const file = join(dir, 'server.json')
    writeFileSync(file, JSON.stringify({ workspaces: [{ path: 'a' }] }))
    const cfg = loadWorkspaceConfig({ config: file, workspace: ['b'] }, {}, dir)
    assert.equal(
      cfg.workspaces.map((w) => w.path),
      [join(dir, 'b')],
    )
  })
})

config.run()
