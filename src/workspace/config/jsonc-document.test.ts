import { assert, suite } from '../../../tests/harness.ts'
import { ApiError } from '../../core/errors.ts'
import { parseJsoncObject, setJsoncPath, setTopLevelKeys } from './jsonc-document.ts'

const test = suite('workspace/jsonc-document')

const TEXT = '{\n    // keep me\n    "a": 1, /* and me */\n    "b": [1, 2],\n}\n'

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

test("top-level edits keep comments, trailing commas and the file's indentation", async () => {
  const out = await setTopLevelKeys(TEXT, { a: 2, c: { d: true } })
  assert.ok(out.includes('// keep me'))
  assert.ok(out.includes('/* and me */'))
  assert.ok(out.includes('"a": 2'))
  assert.ok(out.includes('\n    "c": {\n        "d": true\n    }'))
  assert.equal(await parseJsoncObject(out, 'x'), { a: 2, b: [1, 2], c: { d: true } })
})

test('null removes a key and nested paths are edited in place', async () => {
  assert.equal(await parseJsoncObject(await setTopLevelKeys(TEXT, { b: null }), 'x'), { a: 1 })
  const nested = await setJsoncPath(
    '{\n  // c\n  "mcp": {\n    "x": { "enabled": true }\n  }\n}\n',
    ['mcp', 'x', 'enabled'],
    false,
  )
  assert.ok(nested.includes('// c'))
  assert.equal(await parseJsoncObject(nested, 'x'), { mcp: { x: { enabled: false } } })
})

test('an empty or missing file becomes a pretty object', async () => {
  assert.is(await setTopLevelKeys('', { a: 1 }), '{\n  "a": 1\n}\n')
})

test('parse errors carry code, offset and length; a non-object top level is rejected', async () => {
  const error = await rejection(parseJsoncObject('{ "a": }', 'f.jsonc'))
  assert.instance(error, ApiError)
  const e = error as ApiError
  assert.is(e.status, 422)
  assert.is(e.code, 'invalid_jsonc')
  const [first] = e.details as Array<{ code: string; offset: number; length: number }>
  assert.is(first!.code, 'ValueExpected')
  assert.is(first!.offset, 7)
  assert.is(((await rejection(parseJsoncObject('[1]', 'f'))) as ApiError).code, 'invalid_jsonc')
  assert.equal(await parseJsoncObject('  ', 'f'), {})
})

test.run()
