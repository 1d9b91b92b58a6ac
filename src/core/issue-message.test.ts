import * as v from 'valibot'
import { assert, suite } from '../../tests/harness.ts'
import { ApiError } from './errors.ts'
import { parseWith } from './validation.ts'

const messages = suite('core/issue-message')

const Body = v.strictObject({
  name: v.pipe(v.string(), v.minLength(1)),
  sourceMode: v.picklist(['cloud', 'import']),
  limits: v.optional(v.object({ cpus: v.number() })),
  tags: v.optional(v.array(v.string())),
  slug: v.optional(v.pipe(v.string(), v.regex(/^[a-z-]+$/, 'must be kebab-case'))),
})

function failure(input: unknown): ApiError {
  try {
    parseWith(Body, input, 422, 'validation_failed', 'request body')
  } catch (error) {
    if (error instanceof ApiError) return error
    throw error
  }
  throw new Error('expected a validation failure')
}

function issues(input: unknown): Record<string, string> {
  const details = failure(input).details as { issues: Array<{ path: string; message: string }> }
  return Object.fromEntries(details.issues.map((issue) => [issue.path, issue.message]))
}

messages('a missing field is "required" with what it expects, never "Invalid key"', () => {
  const error = failure({ name: 'x' })
  assert.is(error.code, 'validation_failed')
  assert.is(error.status, 422)
  assert.is(error.message, 'Invalid request body at sourceMode: required, expected ("cloud" | "import")')
  assert.equal(issues({ name: 'x', sourceMode: 'cloud', limits: {} }), { 'limits.cpus': 'required, expected number' })
})

messages('an unknown field lists the fields the object accepts', () => {
  assert.equal(issues({ name: 'x', sourceMode: 'cloud', colour: 'red' }), {
    colour: 'unknown field, expected one of: name, sourceMode, limits, tags, slug',
  })
})

messages('wrong types and failed checks name the expectation; messages a schema sets are kept', () => {
  const error = failure({ name: '', sourceMode: 'ftp', tags: ['a', 2], slug: 'Not Kebab' })
  assert.match(error.message, /^Invalid request body at name: expected length >=1, received 0 \(and 3 more/)
  assert.equal(issues({ name: '', sourceMode: 'ftp', tags: ['a', 2], slug: 'Not Kebab' }), {
    name: 'expected length >=1, received 0',
    sourceMode: 'expected ("cloud" | "import"), received "ftp"',
    'tags.1': 'expected string, received 2',
    slug: 'must be kebab-case',
  })
  for (const message of Object.values(issues({ extra: 1 }))) assert.not.match(message, /Invalid key/)
})

messages.run()
