/**
 * `GET /v1/config-objects?limit=50&type=skill` at 1,000, 10,000 and 100,000 config objects in one
 * organization. The list is key-set paged over an `(org_id, object_type, id)` index, so its cost
 * must not grow with the data: the figure with a target is the median latency at 100,000 divided
 * by the median latency at 1,000 (target ≤ 1.3). Requests per second at each size are reported
 * as ratios to the minimal Bun.serve JSON handler measured in the same run.
 *
 * Set-up: one product server per size, each on its own data dir; the owner signs up and creates
 * the organization over HTTP; the objects (a quarter of them skills, the rest spread over the
 * other types) are then inserted straight into the SQLite file in bulk transactions through the
 * same store function the API uses for its rows, so they carry versions and search words.
 * Latency is measured by one sequential client, interleaving the three servers request by
 * request so drift on the machine hits all sizes alike.
 */
import { join } from 'node:path'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import type { ControlPlaneDb } from '../../src/control-plane/schema.ts'
import { newId } from '../../src/core/ids.ts'
import { searchTerms } from '../../src/control-plane/catalog/search-terms.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const SIZES = [1_000, 10_000, 100_000]
const PATH = '/v1/config-objects?limit=50&type=skill'
const LATENCY_REQUESTS_PER_ROUND = 200
const TYPES = ['agent', 'command', 'tool', 'mcp', 'hook', 'context', 'custom']

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

/** Inserts `count` objects with one version each and their search words, 500 objects per transaction. */
async function seed(dir: string, orgId: string, count: number): Promise<void> {
  const database = await openDatabase<ControlPlaneDb>({
    path: join(dir, 'control-plane.sqlite'),
    migrations: controlPlaneMigrations,
  })
  try {
    const now = new Date().toISOString()
    for (let start = 0; start < count; start += 500) {
      await database.db.transaction().execute(async (trx) => {
        const objects: ControlPlaneDb['config_object'][] = []
        const versions: ControlPlaneDb['config_object_version'][] = []
        const terms: ControlPlaneDb['config_object_term'][] = []
        for (let i = start; i < Math.min(count, start + 500); i++) {
          const isSkill = i % 4 === 0
          const type = isSkill ? 'skill' : TYPES[i % TYPES.length]!
          const name = `${type}-${i}`
          const id = newId('cob')
          const versionId = newId('cov')
          const description = `Bench ${type} number ${i}`
          const payload = isSkill
            ? { name, description, body: `Steps for ${name}.\n`, metadata: {} }
            : { name, content: `Content ${i}` }
          objects.push({
            id,
            org_id: orgId,
            object_type: type,
            source_mode: i % 2 ? 'cloud' : 'import',
            title: `Object ${i}`,
            description,
            name,
            status: 'active',
            connector_instance_id: null,
            created_by_member_id: null,
            latest_version_id: versionId,
            version_count: 1,
            latest_created_via: 'cloud',
            latest_created_by_member_id: null,
            latest_source_revision_ref: null,
            latest_created_at: now,
            created_at: now,
            updated_at: now,
            archived_at: null,
            deleted_at: null,
          })
          versions.push({
            id: versionId,
            org_id: orgId,
            config_object_id: id,
            number: 1,
            raw_source_text: isSkill
              ? `---\nname: ${name}\ndescription: ${description}\n---\n\nSteps for ${name}.\n`
              : null,
            normalized_payload: JSON.stringify(payload),
            created_via: 'cloud',
            created_by_member_id: null,
            connector_sync_event_id: null,
            source_revision_ref: null,
            created_at: now,
          })
          for (const term of searchTerms(`Object ${i} ${description} ${name}`))
            terms.push({ org_id: orgId, term, config_object_id: id })
        }
        for (let j = 0; j < objects.length; j += 100)
          await trx
            .insertInto('config_object')
            .values(objects.slice(j, j + 100))
            .execute()
        for (let j = 0; j < versions.length; j += 100)
          await trx
            .insertInto('config_object_version')
            .values(versions.slice(j, j + 100))
            .execute()
        for (let j = 0; j < terms.length; j += 300)
          await trx
            .insertInto('config_object_term')
            .values(terms.slice(j, j + 300))
            .execute()
      })
    }
  } finally {
    await database.close()
  }
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const servers: RunningServer[] = []
  try {
    const baseline = await startServer(ctx.baselineCommand())
    servers.push(baseline)
    const subjects: Array<{ size: number; url: string; headers: Record<string, string> }> = []
    for (const size of SIZES) {
      const dir = ctx.tempDir(`config-objects-${size}`)
      const server = await startServer(ctx.productCommand('source', dir, undefined, 'control-plane'))
      servers.push(server)
      const signedUp = await json(
        await fetch(`${server.baseUrl}/v1/auth/sign-up`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'owner@bench.test', password: 'bench password', name: 'Owner' }),
        }),
        'sign-up',
      )
      const headers = { authorization: `Bearer ${signedUp.session.token}` }
      const org = await json(
        await fetch(`${server.baseUrl}/v1/orgs`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Bench' }),
        }),
        'create org',
      )
      const started = performance.now()
      await seed(dir, org.item.id, size)
      ctx.log(`seeded ${size} config objects in ${round((performance.now() - started) / 1000, 1)} s`)
      const page = await json(await fetch(`${server.baseUrl}${PATH}`, { headers }), `list at ${size}`)
      if (page.items.length !== 50 || page.items.some((i: { type: string }) => i.type !== 'skill'))
        throw new Error(`at ${size}: expected 50 skills`)
      subjects.push({ size, url: `${server.baseUrl}${PATH}`, headers })
    }
    const label = (size: number) => `GET ${PATH} @ ${size.toLocaleString('en-US')}`

    // Sequential latency, interleaved request by request across sizes.
    for (const subject of subjects)
      for (let i = 0; i < 50; i++) await (await fetch(subject.url, { headers: subject.headers })).arrayBuffer()
    const latencyRounds: Array<Record<number, number>> = []
    for (let r = 0; r < s.rounds; r++) {
      const samples: Record<number, number[]> = Object.fromEntries(SIZES.map((size) => [size, []]))
      for (let i = 0; i < LATENCY_REQUESTS_PER_ROUND; i++) {
        const order = (i + r) % 2 === 0 ? subjects : [...subjects].reverse()
        for (const subject of order) {
          const t0 = performance.now()
          const res = await fetch(subject.url, { headers: subject.headers })
          await res.arrayBuffer()
          if (res.status !== 200) throw new Error(`${label(subject.size)} answered ${res.status}`)
          samples[subject.size]!.push(performance.now() - t0)
        }
      }
      const medians = Object.fromEntries(SIZES.map((size) => [size, median(samples[size]!)])) as Record<number, number>
      latencyRounds.push(medians)
      ctx.log(
        `latency round ${r + 1}/${s.rounds}: ${SIZES.map((size) => `${size}: ${round(medians[size]!, 3)} ms`).join(', ')}`,
      )
    }
    const smallest = SIZES[0]!
    for (const size of SIZES.slice(1)) {
      ctx.record(
        makeFigure({
          caseName: 'control-plane-config-objects',
          name: `${label(size)} median latency / @ ${smallest.toLocaleString('en-US')}`,
          unit: 'ms',
          subject: `median latency with ${size.toLocaleString('en-US')} objects`,
          baselineLabel: `median latency with ${smallest.toLocaleString('en-US')} objects`,
          rounds: latencyRounds.map((m) => ({ baseline: m[smallest]!, ours: m[size]! })),
          target: size === SIZES[SIZES.length - 1] ? { op: '<=', value: 1.3 } : undefined,
          notes: [
            `one sequential client, ${LATENCY_REQUESTS_PER_ROUND} requests per size per round; medians ${SIZES.map((x) => `${x}: ${round(median(latencyRounds.map((m) => m[x]!)), 3)} ms`).join(', ')}`,
          ],
        }),
      )
    }

    // Throughput against the Bun.serve baseline.
    const targets: LoadTarget[] = [
      { key: 'baseline', url: `${baseline.baseUrl}/` },
      ...subjects.map((x) => ({ key: label(x.size), url: x.url, headers: x.headers })),
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        for (const x of subjects)
          printRound(label(x.size), r, s.rounds, res[label(x.size)]!.rps, res.baseline!.rps, 'req/s')
      },
    })
    for (const x of subjects) {
      const mine = results[label(x.size)]!
      const bad = mine.reduce((a, y) => a + y.non2xx + y.errors, 0)
      const total = mine.reduce((a, y) => a + y.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'control-plane-config-objects',
          name: `${label(x.size)} req/s`,
          unit: 'req/s',
          subject: `bun bin/service-server.ts --mode control-plane (${x.size.toLocaleString('en-US')} config objects, owner session)`,
          baselineLabel: 'Bun.serve JSON',
          rounds: mine.map((y, i) => ({ baseline: results.baseline![i]!.rps, ours: y.rps })),
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p50 ours ${round(median(mine.map((y) => y.latencyP50Ms)), 2)} ms`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'control-plane-config-objects',
  description:
    'GET /v1/config-objects?limit=50&type=skill at 1k/10k/100k objects: latency ratio largest/smallest (≤ 1.3) and req/s vs Bun.serve JSON',
  run,
})
