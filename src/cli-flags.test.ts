import { assert, suite } from '../tests/harness.ts'
import { helpText, parseServerFlags, UsageError } from './cli-flags.ts'

const flags = suite('cli-flags')

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

flags('a flag of the other mode is refused', () => {
  assert.match(usage(['--mode', 'control-plane', '--workspace', '.']), /--workspace applies to --mode workspace/)
  assert.match(usage(['--database', 'x']), /--database applies to --mode control-plane/)
})

flags('help lists every flag', () => {
  const text = helpText('1.2.3')
  for (const name of [
    '--mode',
    '--config',
    '--host',
    '--port',
    '--data-dir',
    '--log-format',
    '--approval-timeout',
    '--database',
  ])
    assert.ok(text.includes(name), name)
})

flags.run()
