/**
 * Where the time of one authenticated control-plane request goes, layer by layer, in process.
 *
 * Usage: bun bench/profile-request.ts [--iterations 3000] [--cpu-prof]
 *
 * Builds the `control-plane-world` organization in a temp dir on SQLite, then:
 * 1. times whole requests through `app.fetch` (no socket) for the four routes the floor case
 *    compares, next to the same work written directly on bun:sqlite (`bench/floor-handlers.ts`);
 * 2. times each layer of `GET /v1/config-objects?type=skill&limit=50` on its own, repeating just
 *    that step: routing, authentication, query validation, the query builder (build + compile),
 *    the driver (the compiled statement run on the raw bun:sqlite handle), the driver through
 *    kysely, row mapping, JSON serialization and the response with its headers. Output
 *    validation is listed too: production no longer runs it (the contract tests do), so its cost
 *    shows what was taken off every response.
 *
 * With `--cpu-prof` run it as `bun --cpu-prof --cpu-prof-dir=<dir> bench/profile-request.ts` to get
 * a `.cpuprofile` of phase 1 as well (open it in Chrome DevTools or speedscope).
 * @module
 */
import { join } from 'node:path'
import * as v from 'valibot'
import { createControlPlaneApp } from '../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../src/control-plane/config.ts'
import { listConfigObjects, objectQuery, objectView } from '../src/control-plane/catalog/config-objects.ts'
import { ConfigObjectListQuery, ConfigObjectPage } from '../src/control-plane/wire/config-objects.ts'
import { actorOf } from '../src/control-plane/auth.ts'
import { controlPlaneValidation } from '../src/control-plane/app.ts'
import { silentLogger } from '../src/core/logger.ts'
import { parseWith, queryObject } from '../src/core/validation.ts'
import { buildWorld, READ_PATHS } from './lib/control-plane-world.ts'
import { floorHandlers } from './floor-handlers.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'

const bun = (globalThis as any).Bun
const ITERATIONS = Number(process.argv[process.argv.indexOf('--iterations') + 1] || 3000) || 3000

async function time(label: string, n: number, step: () => unknown): Promise<number> {
  for (let i = 0; i < Math.min(200, n); i++) await step()
  const start = performance.now()
  for (let i = 0; i < n; i++) await step()
  const us = ((performance.now() - start) * 1000) / n
  console.log(`  ${label.padEnd(58)} ${us.toFixed(1).padStart(8)} µs`)
  return us
}

const dir = mkdtempSync(join(tmpdir(), 'svc-profile-'))
try {
  const base = loadControlPlaneConfig({}, {}, dir)
  const app = await createControlPlaneApp(
    { ...base, dataDir: dir, databasePath: join(dir, 'control-plane.sqlite'), logRequests: false, openSignUp: true },
    { logger: silentLogger },
  )
  try {
    const origin = 'http://127.0.0.1'
    const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      app.fetch(
        new Request(origin + path, {
          method,
          headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
    const world = await buildWorld(send, join(dir, 'control-plane.sqlite'), (m) => console.log(m))
    const floor = await floorHandlers(join(dir, 'control-plane.sqlite'))

    console.log(`\nWhole requests, in process (${ITERATIONS} each; µs per request)`)
    for (const [label, path] of Object.entries(READ_PATHS)) {
      const ours = await time(`ours  ${label}`, ITERATIONS, async () => {
        const res = await app.fetch(new Request(origin + path, { headers: world.headers }))
        await res.text()
      })
      const theirs = await time(`floor ${label}`, ITERATIONS, async () => {
        const res = await floor.fetch(new Request(origin + path, { headers: world.headers }))
        await res.text()
      })
      console.log(`  ${'ours ÷ floor (throughput)'.padEnd(58)} ${(theirs / ours).toFixed(2).padStart(8)}`)
    }

    const path = READ_PATHS['GET /v1/config-objects?type=skill&limit=50']!
    console.log(`\nLayers of GET ${path} (each step alone, ${ITERATIONS} times)`)
    const request = new Request(origin + path, { headers: world.headers })
    const listRoute = app.contract.routes.find((r) => r.operationId === 'listConfigObjects')!
    await time('whole request (app.fetch)', ITERATIONS, async () => (await app.fetch(request.clone())).text())
    await time('routing + headers + 404 shaping (unknown path)', ITERATIONS, () =>
      app.fetch(new Request(`${origin}/v1/no-such-route`)),
    )
    const principal = await app.contract.auth.authenticate(request, listRoute.auth)
    await time('authentication (session lookup, membership, policy)', ITERATIONS, () =>
      app.contract.auth.authenticate(request, listRoute.auth),
    )
    const url = new URL(request.url)
    const query = parseWith(ConfigObjectListQuery, queryObject(url), 422, 'validation_failed', 'query parameter')
    await time('query validation (URL parse + valibot)', ITERATIONS, () =>
      parseWith(ConfigObjectListQuery, queryObject(new URL(request.url)), 422, 'validation_failed', 'q'),
    )
    const actor = actorOf(principal)
    const built = () =>
      objectQuery(app.deps.db, actor.orgId)
        .where('co.object_type', '=', 'skill')
        .where('co.status', '!=', 'deleted')
        .orderBy('co.id')
        .limit(51)
    await time('query builder (build + compile)', ITERATIONS, () => built().compile())
    const compiled = built().compile()
    const { Database } = await import('bun:sqlite' as string)
    const raw = new Database(join(dir, 'control-plane.sqlite'), { readonly: true, strict: true })
    const statement = raw.prepare(compiled.sql)
    const rows = statement.all(...(compiled.parameters as unknown[])) as any[]
    await time('driver: the compiled SQL on a raw bun:sqlite statement', ITERATIONS, () =>
      statement.all(...(compiled.parameters as unknown[])),
    )
    await time('driver through kysely (executeQuery of the compiled SQL)', ITERATIONS, () =>
      app.deps.db.executeQuery(compiled),
    )
    await time('domain call (listConfigObjects: build, fingerprint, run, map)', ITERATIONS, () =>
      listConfigObjects(app.deps, actor, { ...query, pluginId: undefined, connectorInstanceId: undefined }),
    )
    const page = await listConfigObjects(app.deps, actor, { ...query })
    await time('row mapping (objectView × 50)', ITERATIONS, () => rows.slice(0, 50).map(objectView))
    await time('output validation (valibot ConfigObjectPage; not run in production)', ITERATIONS, () =>
      v.safeParse(ConfigObjectPage, page),
    )
    const text = JSON.stringify(page)
    await time('JSON serialization (JSON.stringify of the page)', ITERATIONS, () => JSON.stringify(page))
    await time('response with headers (new Response, 3 headers)', ITERATIONS, () => {
      return new Response(text, {
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'x-request-id': 'req_0000000000000000000000',
          'x-content-type-options': 'nosniff',
        },
      })
    })
    console.log(
      `\n(${controlPlaneValidation.status} validation policy; ${rows.length} rows; bun ${bun?.version ?? '?'})`,
    )
    raw.close()
    floor.close()
  } finally {
    await app.close()
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
