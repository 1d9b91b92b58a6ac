import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { assert, BUN, runCommand, startChild, suite, withTempDir } from '../tests/harness.ts'
import { FLAGS, parseServerFlags, UsageError } from './cli-flags.ts'
import { helpText } from './help-text.ts'

const flags = suite('cli-flags', { timeoutMs: 60_000 })
const ENTRY = fileURLToPath(new URL('../bin/service-server.ts', import.meta.url))

function usage(argv: string[]): string {
  try {
    parseServerFlags(argv)
  } catch (error) {
    if (error instanceof UsageError) return error.message
    throw error
  }
  throw new Error('expected a UsageError')
}

flags('the mode defaults to workspace and flags parse by long name', () => {
  const { mode, flags: parsed } = parseServerFlags([
    '--port',
    '0',
    '--workspace',
    'a',
    '--workspace',
    'b',
    '--read-only',
  ])
  assert.is(mode, 'workspace')
  assert.equal([parsed.port, parsed.workspace, parsed['read-only']], ['0', ['a', 'b'], true])
  assert.is(parseServerFlags(['--mode', 'control-plane', '--database', 'x.sqlite']).mode, 'control-plane')
})

flags('an unknown flag or mode is one line naming the valid choices', () => {
  const unknown = usage(['--bogus'])
  assert.match(unknown, /unknown option --bogus; valid options: --mode, --config/)
  assert.not.match(unknown, /\n/)
  assert.is(usage(['--mode', 'server']), "invalid --mode 'server'; valid modes: workspace, control-plane")
})

flags('every command line parses to what node:util parseArgs makes of it, or fails with its message', () => {
  const options = Object.fromEntries(
    Object.entries(FLAGS).map(([name, f]) => [
      name,
      { type: f.type, ...(f.multiple ? { multiple: true } : {}), ...(f.short ? { short: f.short } : {}) },
    ]),
  )
  const reference = (args: string[]) => {
    try {
      return { values: { ...parseArgs({ args, options, strict: true, allowPositionals: false }).values } }
    } catch (error) {
      return { error: (error as Error).message.split('\n')[0] }
    }
  }
  const ours = (args: string[]) => {
    try {
      return { values: { ...parseServerFlags(args).flags } }
    } catch (error) {
      return { error: (error as Error).message }
    }
  }
  for (const args of [
    [],
    ['--port', '0', '--host', '127.0.0.1', '--config', 'a.json', '--data-dir', 'd'],
    ['--port=0', '--port', '1', '--cors='],
    ['--workspace', 'a', '--workspace=b', '--workspace', 'c', '--read-only', '--read-only'],
    ['--mode', 'control-plane', '--database-url', 'postgres://x', '--log-requests'],
    ['-h', '-v', '--help', '--version'],
    ['--port', '-1'],
    ['--port', '-'],
    ['--port', '--host'],
    ['--port'],
    ['--help=yes'],
    ['-hv'],
    ['-x'],
    ['--', '--port', '0'],
    ['serve'],
    ['--Port', '0'],
    ['--constructor'],
    ['--token', 'a=b', '--host-token=c=d'],
  ]) {
    const want = reference(args)
    const got = ours(args)
    if (want.values) assert.equal(got, want, args.join(' '))
    else {
      // Refused as parseArgs refuses it: the argument its message names is named in ours.
      const named = /'([^']+)'/.exec(want.error!)?.[1] ?? ''
      assert.ok(got.error?.includes(named.replace(/ <value>$/, '')), `${args.join(' ')}: ${got.error} / ${want.error}`)
    }
  }
  assert.is(Object.getPrototypeOf(parseServerFlags(['--port', '0']).flags), null)
})

flags('a flag of the other mode is refused', () => {
  assert.match(usage(['--mode', 'control-plane', '--workspace', '.']), /--workspace applies to --mode workspace/)
  assert.match(usage(['--database', 'x']), /--database applies to --mode control-plane/)
})

flags('help without --mode is an overview that points to each mode', () => {
  const text = helpText('1.2.3')
  for (const name of ['--mode', '--config', '--host', '--port', '--data-dir', '--log-format', '--cors'])
    assert.ok(text.includes(name), name)
  assert.match(text, /--mode workspace --help/)
  assert.match(text, /--mode control-plane --help/)
  assert.match(text, /XDG_CONFIG_HOME/)
  assert.not.match(text, /--approval-timeout|--database-url|SERVICE_APPROVAL_MODE/)
})

flags("help for a mode lists that mode's flags, variables and config keys and none of the other's", () => {
  const workspace = helpText('1.2.3', 'workspace')
  for (const word of [
    '--approval-timeout',
    '--read-only',
    'SERVICE_APPROVAL_MODE',
    'approval.timeoutMs',
    'XDG_CONFIG_HOME',
  ])
    assert.ok(workspace.includes(word), word)
  assert.not.match(workspace, /--database|SERVICE_DATABASE_URL|openSignUp/)
  const controlPlane = helpText('1.2.3', 'control-plane')
  for (const word of [
    '--database-url',
    'SERVICE_DATABASE_URL',
    'databasePool.size',
    'openSignUp',
    'SERVICE_CONTROL_PLANE_CONFIG',
  ])
    assert.ok(controlPlane.includes(word), word)
  assert.not.match(controlPlane, /--approval|SERVICE_TOKEN|readOnly/)
})

/** Runs the real entry point, `bin/service-server.ts`, as a child process with a private home. */
function entry(dir: string, args: string[], env: Record<string, string> = {}) {
  return runCommand(BUN, [ENTRY, ...args], {
    cwd: dir,
    env: { HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg-config'), XDG_DATA_HOME: join(dir, 'xdg-data'), ...env },
    timeoutMs: 30_000,
  })
}

flags('the entry prints per-mode help and never the database URL from the environment', async () => {
  await withTempDir(async (dir) => {
    const env = { SERVICE_DATABASE_URL: 'postgres://svc:hunter2-secret@db.example:5432/svc' }
    const overview = await entry(dir, ['--help'], env)
    const controlPlane = await entry(dir, ['--mode', 'control-plane', '--help'], env)
    const workspace = await entry(dir, ['--mode', 'workspace', '--help'], env)
    assert.equal([overview.code, controlPlane.code, workspace.code], [0, 0, 0])
    assert.match(overview.stdout, /--mode control-plane --help/)
    assert.match(controlPlane.stdout, /SERVICE_DATABASE_URL/)
    assert.match(workspace.stdout, /SERVICE_APPROVAL_MODE/)
    for (const out of [overview, controlPlane, workspace])
      assert.not.match(out.stdout + out.stderr, /hunter2|db\.example/)
    assert.is(new Set([overview.stdout, controlPlane.stdout, workspace.stdout]).size, 3, 'three different texts')
  })
})

for (const mode of ['workspace', 'control-plane']) {
  flags(`in ${mode} mode a --config file that does not exist exits 2 naming the path and the reason`, async () => {
    await withTempDir(async (dir) => {
      const missing = join(dir, 'typo', 'server.json')
      const result = await entry(dir, ['--mode', mode, '--config', missing, '--port', '0'])
      assert.is(result.code, 2, result.stderr)
      const lines = result.stderr.trim().split('\n')
      assert.is(lines.length, 1, result.stderr)
      assert.ok(lines[0]!.includes(missing), lines[0])
      assert.match(lines[0]!, /does not exist \(named by --config\)/)
      assert.is(result.stdout, '', 'nothing listened and no token was printed')
      assert.not.ok(existsSync(join(dir, 'typo')), 'no directory or credentials were created beside the path')
    })
  })
}

flags('a --config path that is a directory exits 2 saying so', async () => {
  await withTempDir(async (dir) => {
    const result = await entry(dir, ['--config', dir, '--port', '0'])
    assert.is(result.code, 2, result.stderr)
    assert.match(result.stderr, /cannot read file: is a directory/)
    assert.ok(result.stderr.includes(dir))
  })
})

flags('--approval auto prints one warning line on stderr at start that writes are not gated', async () => {
  await withTempDir(async (dir) => {
    const config = join(dir, 'server.json')
    writeFileSync(config, '{}')
    mkdirSync(join(dir, 'ws'))
    const args = ['--config', config, '--workspace', join(dir, 'ws'), '--data-dir', join(dir, 'data'), '--port', '0']
    const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg-config') }
    const stderrOf = async (extra: string[]) => {
      const child = await startChild(BUN, [ENTRY, ...args, ...extra], { cwd: dir, env })
      assert.is(await child.stop(), 0)
      return child.stderr()
    }
    const auto = await stderrOf(['--approval', 'auto'])
    assert.is(auto.split('\n').filter((line) => /not gated/.test(line)).length, 1, auto)
    assert.not.match(await stderrOf(['--approval', 'manual']), /not gated/)
  })
})

flags.run()
