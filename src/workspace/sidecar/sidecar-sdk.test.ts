/**
 * OpenCode's own SDK (`@opencode-ai/sdk` at the `opencode-ai` version the tests use) pointed at our
 * mount, run as viewer, collaborator and owner against the fake upstream: every call the SDK can
 * make is compared with the allow-list. A call the table allows the role must be forwarded, any
 * other must be refused before it reaches the sidecar, and every governed call that went through
 * must have left its audit entry.
 */
import { createOpencodeClient } from '@opencode-ai/sdk/v2/client'
import { assert, request, suite } from '../../../tests/harness.ts'
import { classifySidecarRequest } from './route-policy.ts'
import { type ProxyFixture, startProxyFixture } from '../testing/sidecar-test-kit.ts'

const ctx: { fx: ProxyFixture } = {} as never
const sdk = suite<typeof ctx>('workspace/sidecar allow-list driven by the OpenCode SDK (fake upstream)', {
  timeoutMs: 60_000,
})

sdk.before(async () => {
  ctx.fx = await startProxyFixture()
})

sdk.after(async () => {
  await ctx.fx?.close()
})

/** Every SDK method, as `group.method` → a function calling it. */
function sdkMethods(client: object): Map<string, () => unknown> {
  const out = new Map<string, () => unknown>()
  // Every field a generated method reads from its parameter object (named in its source) gets a
  // placeholder, so path parameters are filled as a real caller's would be.
  // A bogus WebSocket ticket would be refused (401) and V2 `location` is an object.
  const special: Record<string, unknown> = { ticket: undefined, location: { directory: '/elsewhere' } }
  const parametersOf = (method: (...args: unknown[]) => unknown) =>
    Object.fromEntries(
      [...String(method).matchAll(/key: "(\w+)"/g)].map((m) => [m[1]!, m[1]! in special ? special[m[1]!] : 'x1']),
    )
  const walk = (target: object, prefix: string, depth: number) => {
    if (depth > 4) return
    const proto = Object.getPrototypeOf(target)
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || name.startsWith('_')) continue
      const descriptor = Object.getOwnPropertyDescriptor(proto, name)!
      if (descriptor.get) walk((target as Record<string, object>)[name]!, `${prefix}${name}.`, depth + 1)
      // Generated methods take (parameters, options), or only (options) when the route has no parameters.
      else if (typeof descriptor.value === 'function')
        out.set(`${prefix}${name}`, () =>
          descriptor.value.length >= 2
            ? descriptor.value.call(target, parametersOf(descriptor.value))
            : descriptor.value.call(target),
        )
    }
  }
  walk(client, '', 0)
  return out
}

const RANK = { viewer: 1, collaborator: 2, owner: 3 } as const

sdk('every SDK call is forwarded exactly when the table allows the role, and governed calls are audited', async () => {
  const mismatches: string[] = []
  let calls = 0
  for (const as of ['viewer', 'collaborator', 'owner'] as const) {
    let last: { method: string; path: string; status: number } | null = null
    const client = createOpencodeClient({
      baseUrl: 'http://sdk.test/sidecar',
      fetch: (async (input: Request) => {
        const headers = new Headers(input.headers)
        headers.set('authorization', `Bearer ${ctx.fx.kit.tokens[as]}`)
        const url = new URL(input.url)
        const res = await request(ctx.fx.kit.app.fetch, url.pathname + url.search, {
          method: input.method,
          headers,
          body: input.method === 'GET' || input.method === 'HEAD' ? undefined : await input.text(),
        })
        last = { method: input.method, path: url.pathname.replace(/^\/sidecar/, ''), status: res.status }
        return res
      }) as never,
    })
    for (const [name, call] of sdkMethods(client)) {
      last = null
      const before = ctx.fx.fake.requests.length
      const result = call() as Promise<unknown> & { stream?: AsyncIterable<unknown> }
      // Event subscriptions return a lazy stream; they are covered by the streaming suites.
      const settled = await Promise.race([
        Promise.resolve(result).catch(() => undefined),
        new Promise((r) => setTimeout(r, 5000)),
      ])
      if ((settled as { stream?: unknown } | undefined)?.stream || !last) continue
      const seen = last as { method: string; path: string; status: number }
      calls++
      const classified = classifySidecarRequest(seen.method, seen.path)
      const required = classified?.entry.role ?? 'owner'
      const allowed = RANK[as] >= RANK[required]
      const forwarded =
        ctx.fx.fake.requests.length > before ||
        (classified?.entry.kind === 'websocket' && seen.status === 426) ||
        // A session id the fake does not know passes the ownership check and is answered by the fake.
        false
      if (allowed !== forwarded)
        mismatches.push(`${as} ${name} → ${seen.method} ${seen.path}: ${seen.status} (table: ${required})`)
      if (forwarded && classified?.entry.governance) {
        const audit = await ctx.fx.kit.app.services.audit.list(ctx.fx.kit.wsIds[0]!, 20)
        if (!audit.some((e) => e.action === `sidecar.${classified.entry.operationId}`))
          mismatches.push(`${as} ${name}: governed call without an audit entry`)
      }
    }
  }
  assert.ok(calls > 300, `only ${calls} SDK calls were made`)
  assert.equal(mismatches, [])
})

sdk.run()
