/**
 * One control-plane instance against two on the same PostgreSQL database, under the same load:
 * `GET /v1/config-objects?limit=50&type=skill` (10,000 objects) and `POST /v1/config-objects`.
 * In each round the load (the same total connections) goes once to one instance and once split
 * evenly over two, order alternated; the figure is two instances' total req/s divided by one's.
 * No target: on a machine with fewer cores than the two instances, PostgreSQL and the load
 * generator want, a second instance cannot add throughput, and the ratio shows how much it costs
 * or gains; on separate machines it shows how far the database lets the control plane scale out.
 */
import { runLoad, type LoadResult } from '../lib/load-driver.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { createBenchDatabase, ownerWithOrg, seedConfigObjects, startPostgresInstance } from '../lib/pg-bench.ts'
import { printRound } from '../lib/results-printer.ts'
import type { RunningServer } from '../lib/server-process.ts'

const OBJECTS = 10_000

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const database = await createBenchDatabase(ctx, 'pg_instances')
  if (!database) return
  const servers: RunningServer[] = []
  try {
    servers.push(await startPostgresInstance(ctx, database.url, 'pg-instance-1'))
    servers.push(await startPostgresInstance(ctx, database.url, 'pg-instance-2'))
    const [one, two] = servers as [RunningServer, RunningServer]
    const owner = await ownerWithOrg(one.baseUrl)
    ctx.log(`seeding ${OBJECTS} config objects`)
    await seedConfigObjects(database.url, owner.orgId, OBJECTS)
    const subjects = [
      { label: 'GET /v1/config-objects?limit=50&type=skill', path: '/v1/config-objects?limit=50&type=skill' },
      {
        label: 'POST /v1/config-objects',
        // Creates in one organization at 50 connections time out on SERIALIZABLE retries (see pg-drivers).
        connections: Math.min(s.connections, 8),
        path: '/v1/config-objects',
        method: 'POST',
        body: JSON.stringify({
          type: 'command',
          sourceMode: 'cloud',
          title: 'Bench create',
          input: { rawSourceText: 'Do the bench thing' },
        }),
      },
    ]
    for (const subject of subjects) {
      const headers = subject.body ? { ...owner.headers, 'content-type': 'application/json' } : owner.headers
      const load = (server: RunningServer, connections: number, seconds: number) =>
        runLoad({
          url: `${server.baseUrl}${subject.path}`,
          method: subject.method,
          headers,
          body: subject.body,
          durationSec: seconds,
          connections,
          tool: s.tool,
        })
      const connections = subject.connections ?? s.connections
      const half = Math.max(1, Math.floor(connections / 2))
      const both = async (seconds: number): Promise<LoadResult[]> =>
        Promise.all([load(one, half, seconds), load(two, connections - half, seconds)])
      if (s.warmupSec > 0) await both(s.warmupSec)
      const rounds: Array<{ ours: number; baseline: number }> = []
      let bad = 0
      let total = 0
      for (let r = 0; r < s.rounds; r++) {
        let single = 0
        let pair = 0
        for (const side of r % 2 === 0 ? ['one', 'two'] : ['two', 'one']) {
          const results = side === 'one' ? [await load(one, connections, s.durationSec)] : await both(s.durationSec)
          const rps = results.reduce((sum, x) => sum + x.rps, 0)
          for (const x of results) {
            bad += x.non2xx + x.errors
            total += x.requests
          }
          if (side === 'one') single = rps
          else pair = rps
        }
        rounds.push({ ours: pair, baseline: single })
        printRound(`${subject.label} (two / one instance)`, r, s.rounds, pair, single, 'req/s')
      }
      ctx.record(
        makeFigure({
          caseName: 'pg-instances',
          name: `${subject.label} req/s, two instances vs one (same database, same load)`,
          unit: 'req/s',
          subject: 'two instances, connections split evenly',
          baselineLabel: 'one instance, all connections',
          rounds,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [`${s.tool}, ${connections} connections in total; pool 10 per instance; ${OBJECTS} objects`],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
    await database.drop()
  }
}

export default defineCase({
  name: 'pg-instances',
  description:
    'PostgreSQL: one control-plane instance vs two on the same database under the same load (list page, create); informational',
  run,
})
