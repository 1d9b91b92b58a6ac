/**
 * The scenario of issue 29: while 8 clients append versions to one object, the pool's PostgreSQL
 * backends are terminated every 150 ms (`pg_terminate_backend`). Each client sends a key with
 * every append and retries every 503 (and 409 in progress or write conflict) with the same key.
 * At the end every content is stored exactly once: a write that committed is never made again,
 * and one that did not is made by a retry. On SQLite nothing terminates connections; the same
 * clients run there without faults, so both engines hold the same assertions.
 */
import pg from 'pg'
import { DatabaseUnavailableError } from '../../core/errors.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { TEST_ENGINE } from '../testing/test-database.ts'

const test = suite('control-plane/retry-under-terminations', { timeoutMs: 240_000 })

const CLIENTS = 8
const APPENDS = 12

/** Terminates the plane's pooled backends every `everyMs` until stopped; counts what it ended. */
async function terminator(t: TestControlPlane, everyMs: number) {
  const url = new URL(t.databaseUrl!)
  const database = url.pathname.slice(1)
  const client = new pg.Client({ connectionString: url.toString(), application_name: 'terminator' })
  client.on('error', () => {})
  await client.connect()
  let terminated = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, everyMs))
      const result = await client.query(
        `select pg_terminate_backend(pid) as ended from pg_stat_activity
         where datname = $1 and application_name = 'service-server' and pid <> pg_backend_pid()`,
        [database],
      )
      terminated += result.rows.filter((row: { ended: boolean }) => row.ended).length
    }
  })()
  return {
    async stop(): Promise<number> {
      stopped = true
      await loop
      await client.end()
      return terminated
    },
  }
}

test('with backends terminated every 150 ms, 8 clients retrying 503s with their key store every content exactly once', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'terminations')
    const created = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: { type: 'context', sourceMode: 'cloud', title: 'Log', input: { rawSourceText: 'start' } },
    })
    assert.is(created.status, 201)
    const id = created.body.item.id as string
    const faults = TEST_ENGINE === 'postgres' ? await terminator(t, 150) : null
    const seen = new Map<string, number>()
    const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
    // A bound in time rather than in tries: on a loaded machine a request can take longer than
    // the 150 ms between terminations, and then most tries are cut; they must still all settle.
    const deadline = Date.now() + 180_000
    try {
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          for (let i = 0; i < APPENDS; i++) {
            const key = `append-${c}-${i}`
            for (;;) {
              assert.ok(Date.now() < deadline, `${key} never settled`)
              const r = await t.client.post(`/v1/config-objects/${id}/versions`, {
                token: org.owner.token,
                json: { input: { rawSourceText: `content ${c}-${i}` } },
                headers: { 'idempotency-key': key },
              })
              count(`${r.status} ${r.body?.code ?? ''}`.trim())
              // Done: stored now, replayed, or carried out with its answer lost.
              if (r.status === 201 || r.body?.code === 'idempotency_answer_lost') break
              assert.ok(
                r.status === 503 || r.body?.code === 'idempotency_key_in_progress' || r.body?.code === 'write_conflict',
                `${r.status} ${JSON.stringify(r.body)}`,
              )
              await new Promise((resolve) => setTimeout(resolve, 50))
            }
          }
        }),
      )
    } finally {
      const terminated = faults ? await faults.stop() : 0
      console.log(`  terminated ${terminated} backends; answers ${JSON.stringify(Object.fromEntries(seen))}`)
    }
    // A pooled connection may still be one the last termination cut: the check read retries too.
    const readStored = () =>
      t.app.deps.db
        .selectFrom('config_object_version')
        .select('raw_source_text')
        .where('config_object_id', '=', id)
        .execute()
    let stored: Awaited<ReturnType<typeof readStored>> | undefined
    for (let attempt = 1; !stored; attempt++) {
      try {
        stored = await readStored()
      } catch (error) {
        if (!(error instanceof DatabaseUnavailableError) || attempt >= 5) throw error
      }
    }
    const texts = stored.map((v) => v.raw_source_text).sort()
    const expected = ['start']
    for (let c = 0; c < CLIENTS; c++) for (let i = 0; i < APPENDS; i++) expected.push(`content ${c}-${i}`)
    assert.equal(texts, expected.sort())
  } finally {
    await t.close()
  }
})

test.run()
