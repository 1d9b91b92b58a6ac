/**
 * The SDK's drift check: regenerating it from the route declarations changes nothing, so the
 * checked-in `sdk/openapi/` documents and `sdk/src/gen/` code always match the servers. After
 * changing a route, run `npm run sdk` and commit the result.
 */
import { sdkDrift } from '../../sdk/generate.ts'
import { assert, suite } from '../harness.ts'

const test = suite('sdk/drift', { timeoutMs: 180_000 })

test('regenerating the SDK from both OpenAPI documents changes no file', async () => {
  const differing = await sdkDrift()
  assert.equal(differing, [], `run npm run sdk; these differ: ${differing.join(', ')}`)
})

test.run()
