/**
 * Compares http-app's dispatch with itty-router's own first-match rule over a route table.
 *
 * Why: our router (src/core/router.ts) compiles the route patterns itself and dispatches with
 * exact-path maps and literal-segment buckets for speed, while the patterns keep itty-router's
 * documented syntax and first-match rule. itty, used here only through its documented API (a
 * `Router()` with one handler per route, answered by `router.fetch`), is the oracle: this check
 * instantiates every
 * pattern with many segment values, trailing slashes included, and reports each method and path
 * where the two would pick different routes, so a route added in an order the fast path does
 * not honour fails a test instead of answering from the wrong handler.
 */
import { Router } from 'itty-router'
import { createHttpApp } from '../src/core/http-app.ts'
import { silentLogger } from '../src/core/logger.ts'
import { declaredRoutes, type AnyRoute } from '../src/core/route.ts'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * Request paths that exercise `routes`: each pattern with its parameters filled by a plain value, an
 * encoded slash, or a literal another route has at that position (where tables collide); greedy
 * parts (`:name+`, `*`) span two segments; each path also with trailing slashes.
 */
function samplePaths(routes: ReadonlyArray<AnyRoute<unknown, unknown>>): Set<string> {
  const literalsAt: Array<Set<string>> = []
  for (const r of routes) {
    r.path.split('/').forEach((segment, index) => {
      if (segment && !/[:*]/.test(segment)) (literalsAt[index] ??= new Set()).add(segment)
    })
  }
  const paths = new Set<string>()
  for (const r of routes) {
    const segments = r.path.split('/')
    const values = new Set(['x', 'a%2Fb'])
    segments.forEach((segment, index) => {
      if (/[:*]/.test(segment)) for (const literal of literalsAt[index] ?? []) values.add(literal)
    })
    for (const value of values) {
      const path = segments
        .map((s) =>
          s
            .replace(/:\w+\+/, `${value}/more`)
            .replace(/:\w+/, value)
            .replace('*', `${value}/more`),
        )
        .join('/')
      paths.add(path)
      paths.add(`${path}/`)
      paths.add(`${path}//`)
    }
  }
  return paths
}

/**
 * `METHOD path: itty → ours` for every sample where http-app and itty's first match disagree. A
 * route's `subroutes` are registered in itty one by one just before it, the order they stand for.
 */
export async function dispatchDrift(registered: ReadonlyArray<AnyRoute<unknown, unknown>>): Promise<string[]> {
  const routes = declaredRoutes(registered)
  const indexOf = new Map(routes.map((r, index) => [r, index]))
  // Stubs keep each route's method, path and subroutes; the handler names the route it stands for.
  const stub = (r: AnyRoute<unknown, unknown>): AnyRoute<unknown, unknown> => {
    const subroutes = r.subroutes
    const index = indexOf.get(r)!
    let stubs: AnyRoute<unknown, unknown>[] | undefined
    return {
      ...r,
      params: undefined,
      query: undefined,
      body: undefined,
      auth: 'public',
      responses: { 200: { description: 'stub' } },
      subroutes: subroutes && (() => (stubs ??= subroutes().map(stub))),
      handler: () => ({ index }),
    }
  }
  const app = createHttpApp<unknown, unknown>({
    routes: registered.map(stub),
    auth: { authenticate: () => ({}), security: () => [], statuses: () => [] },
    validation: { status: 400, bodyCode: 'invalid_payload', queryCode: 'invalid_query' },
    cors: { origins: [], allowHeaders: [] },
    logger: silentLogger,
  })
  // The oracle: each route answers its index, first match in registration order.
  const itty = Router()
  routes.forEach((r, index) => {
    itty[r.method.toLowerCase() as 'get'](r.path, () => index)
  })
  const name = (index: number | null) => (index === null ? 'none' : `${routes[index]!.method} ${routes[index]!.path}`)
  const drift: string[] = []
  for (const path of samplePaths(routes)) {
    for (const method of METHODS) {
      const answered = await itty.fetch(new Request(`http://service.test${path}`, { method }))
      const wanted = typeof answered === 'number' ? answered : -1
      const res = await app.fetch(new Request(`http://service.test${path}`, { method }))
      const got = res.status === 200 ? ((await res.json()) as { index: number }).index : null
      if (got !== (wanted < 0 ? null : wanted))
        drift.push(`${method} ${path}: itty ${name(wanted < 0 ? null : wanted)} → ours ${name(got)}`)
    }
  }
  return drift
}
