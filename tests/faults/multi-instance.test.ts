/**
 * Several control-plane instances on one PostgreSQL database, as behind a load balancer: the
 * compiled binary three times, requests spread across them. Credentials revoked through one are
 * refused by all at once, throttle counts add up, concurrent appends have one winner per version,
 * the change feed crosses instances and resumes on another after its instance dies, and durable
 * jobs complete exactly once while the processes running them are killed and restarted.
 *
 * Needs `SERVICE_TEST_DATABASE_URL` (`.ci/run` sets it); each test makes its own database.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import { enqueueJob } from '../../src/control-plane/jobs/job-queue.ts'
import type { ControlPlaneDb } from '../../src/control-plane/schema.ts'
import { openDatabase } from '../../src/storage/database.ts'
import {
  assert,
  BUN,
  compiledBinary,
  startChild,
  suite,
  takeSse,
  tempDir,
  withPostgresDatabase,
  type ChildServer,
} from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const binary = join(root, 'dist', 'service-server')
const serverUrl = process.env.SERVICE_TEST_DATABASE_URL
const test = suite('faults/multi-instance', { timeoutMs: 150_000 })
const dir = tempDir('svc-multi-')
const KEY = randomBytes(32).toString('base64')

test.before(async () => {
  if (serverUrl) await compiledBinary()
})
test.after(() => dir.remove())

const withDatabase = (fn: (url: string) => Promise<void>) => withPostgresDatabase(fn, 'svc_multi')

function startInstance(url: string, n: number): Promise<ChildServer> {
  return startChild(binary, ['--mode', 'control-plane', '--data-dir', join(dir.path, `data-${n}`), '--port', '0'], {
    cwd: dir.path,
    env: { HOME: dir.path, SERVICE_DATABASE_URL: url, SERVICE_ENCRYPTION_KEY: KEY, SERVICE_OPEN_SIGN_UP: 'true' },
    timeoutMs: 30_000,
  })
}

async function withInstances(url: string, count: number, fn: (nodes: ChildServer[]) => Promise<void>) {
  const nodes: ChildServer[] = []
  try {
    // One first, so it migrates; the others find the schema current.
    nodes.push(await startInstance(url, 0))
    nodes.push(...(await Promise.all(Array.from({ length: count - 1 }, (_, i) => startInstance(url, i + 1)))))
    await fn(nodes)
  } finally {
    await Promise.all(nodes.map((node) => node.stop()))
  }
}

async function call(node: ChildServer, method: string, path: string, options: { token?: string; json?: unknown } = {}) {
  const res = await fetch(`${node.url}${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: options.json !== undefined ? JSON.stringify(options.json) : undefined,
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null }
}

async function ownerWithOrg(node: ChildServer, email: string) {
  const signUp = await call(node, 'POST', '/v1/auth/sign-up', {
    json: { email, password: 'correct horse battery', name: 'Owner' },
  })
  assert.is(signUp.status, 201, JSON.stringify(signUp.body))
  const token = signUp.body.session.token as string
  const org = await call(node, 'POST', '/v1/orgs', { token, json: { name: 'Shared' } })
  assert.is(org.status, 201)
  return { token, orgId: org.body.item.id as string }
}

if (!serverUrl) {
  console.log('faults/multi-instance skipped: SERVICE_TEST_DATABASE_URL is not set (.ci/run sets it)')
} else {
  test('a session made on one instance and signed out on another is refused by all three at once', async () => {
    await withDatabase((url) =>
      withInstances(url, 3, async ([a, b, c]) => {
        await call(a!, 'POST', '/v1/auth/sign-up', {
          json: { email: 'ann@multi.test', password: 'correct horse battery', name: 'Ann' },
        })
        const signIn = await call(b!, 'POST', '/v1/auth/sign-in', {
          json: { email: 'ann@multi.test', password: 'correct horse battery' },
        })
        assert.is(signIn.status, 200)
        const token = signIn.body.session.token as string
        for (const node of [a!, b!, c!]) assert.is((await call(node, 'GET', '/v1/me', { token })).status, 200)
        const out = await call(c!, 'POST', '/v1/auth/sign-out', { token })
        assert.ok(out.status < 300, `sign-out answered ${out.status}`)
        for (const node of [a!, b!, c!]) assert.is((await call(node, 'GET', '/v1/me', { token })).status, 401)

        const owner = await ownerWithOrg(a!, 'owner@multi.test')
        const key = await call(b!, 'POST', '/v1/api-keys', { token: owner.token, json: { name: 'ci' } })
        assert.is(key.status, 201, JSON.stringify(key.body))
        const apiKey = key.body.key as string
        const withKey = (node: ChildServer) =>
          fetch(`${node.url}/v1/me`, { headers: { 'x-api-key': apiKey } }).then((r) => r.status)
        assert.equal(await Promise.all([a!, b!, c!].map(withKey)), [200, 200, 200])
        const revoked = await call(c!, 'DELETE', `/v1/api-keys/${key.body.item.id}`, { token: owner.token })
        assert.ok(revoked.status < 300, `revoke answered ${revoked.status}`)
        assert.equal(await Promise.all([a!, b!, c!].map(withKey)), [401, 401, 401])
      }),
    )
  })

  test('failed sign-ins spread over three instances count in one window, and every instance answers 429', async () => {
    await withDatabase((url) =>
      withInstances(url, 3, async (nodes) => {
        await call(nodes[0]!, 'POST', '/v1/auth/sign-up', {
          json: { email: 'target@multi.test', password: 'correct horse battery', name: 'T' },
        })
        // The default limit is 5 failures per account: two instances get two guesses, one gets one.
        for (const [i, node] of [nodes[0], nodes[1], nodes[2], nodes[0], nodes[1]].entries()) {
          const res = await call(node!, 'POST', '/v1/auth/sign-in', {
            json: { email: 'target@multi.test', password: `wrong-guess-${i}` },
          })
          assert.is(res.status, 401)
        }
        for (const node of nodes) {
          const res = await call(node, 'POST', '/v1/auth/sign-in', {
            json: { email: 'target@multi.test', password: 'correct horse battery' },
          })
          assert.is(res.status, 429)
          assert.ok(Number(res.headers.get('retry-after')) > 0)
        }
      }),
    )
  })

  test('fifty concurrent appends on one base across three instances: one winner per version, gapless, the rest 409', async () => {
    await withDatabase((url) =>
      withInstances(url, 3, async (nodes) => {
        const owner = await ownerWithOrg(nodes[0]!, 'editor@multi.test')
        const created = await call(nodes[1]!, 'POST', '/v1/config-objects', {
          token: owner.token,
          json: { type: 'context', sourceMode: 'cloud', title: 'Notes', input: { rawSourceText: 'base' } },
        })
        assert.is(created.status, 201, JSON.stringify(created.body))
        const id = created.body.item.id as string
        let base = created.body.item.latestVersion.id as string
        let wins = 0
        for (let round = 0; round < 5; round++) {
          const results = await Promise.all(
            Array.from({ length: 10 }, (_, i) =>
              call(nodes[i % 3]!, 'POST', `/v1/config-objects/${id}/versions`, {
                token: owner.token,
                json: { input: { rawSourceText: `round ${round} writer ${i}` }, baseVersionId: base },
              }),
            ),
          )
          const winners = results.filter((r) => r.status === 201)
          assert.is(winners.length, 1, `round ${round}: ${results.map((r) => r.status).join(',')}`)
          for (const loser of results.filter((r) => r.status !== 201)) {
            assert.is(loser.status, 409)
            assert.is(loser.body.code, 'version_conflict')
          }
          base = winners[0]!.body.item.id
          wins++
        }
        const history = await call(nodes[2]!, 'GET', `/v1/config-objects/${id}/versions?limit=100`, {
          token: owner.token,
        })
        const numbers = (history.body.items as Array<{ number: number }>).map((v) => v.number).sort((x, y) => x - y)
        assert.equal(
          numbers,
          Array.from({ length: wins + 1 }, (_, i) => i + 1),
        )
      }),
    )
  })

  test('a subscriber hears changes made through the other instances in order, and resumes on another after its instance dies', async () => {
    await withDatabase((url) =>
      withInstances(url, 3, async (nodes) => {
        const owner = await ownerWithOrg(nodes[0]!, 'watcher@multi.test')
        const stream = (node: ChildServer, lastEventId?: string) =>
          fetch(`${node.url}/v1/events`, {
            headers: {
              authorization: `Bearer ${owner.token}`,
              accept: 'text/event-stream',
              ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
            },
          })
        const live = await stream(nodes[0]!)
        const made: string[] = []
        for (let i = 0; i < 6; i++) {
          const node = nodes[1 + (i % 2)]!
          const res = await call(node, 'POST', '/v1/config-objects', {
            token: owner.token,
            json: { type: 'context', sourceMode: 'cloud', title: `Doc ${i}`, input: { rawSourceText: `text ${i}` } },
          })
          assert.is(res.status, 201)
          made.push(res.body.item.id)
        }
        const frames = await takeSse(live, 6, 15_000)
        assert.equal(
          frames.map((f) => JSON.parse(f.data).subject.id),
          made,
        )
        const seqs = frames.map((f) => Number(f.id))
        for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, 'in order')
        // Nothing missed: the stream carried exactly what the page form lists.
        const listed = await call(nodes[2]!, 'GET', `/v1/events?after=${seqs[0]! - 1}&limit=100`, {
          token: owner.token,
        })
        assert.equal(
          listed.body.items.map((e: { seq: number }) => e.seq),
          seqs,
        )
        // The subscriber's instance dies; more changes happen; it resumes on another instance.
        await nodes[0]!.stop('SIGKILL')
        for (let i = 6; i < 9; i++) {
          await call(nodes[1]!, 'POST', '/v1/config-objects', {
            token: owner.token,
            json: { type: 'context', sourceMode: 'cloud', title: `Doc ${i}`, input: { rawSourceText: `text ${i}` } },
          })
        }
        const resumed = await takeSse(await stream(nodes[2]!, frames[5]!.id), 3, 15_000)
        const after = await call(nodes[2]!, 'GET', `/v1/events?after=${seqs[5]}&limit=100`, { token: owner.token })
        assert.equal(
          resumed.map((f) => Number(f.id)),
          after.body.items.map((e: { seq: number }) => e.seq),
        )
        assert.is(resumed.length, 3)
      }),
    )
  })

  test('two hundred jobs complete exactly once while the processes running them are killed and restarted', async () => {
    await withDatabase(async (url) => {
      const database = await openDatabase<ControlPlaneDb>({ path: ':unused:', url, migrations: controlPlaneMigrations })
      const runners: ChildProcess[] = []
      const startRunner = () =>
        new Promise<ChildProcess>((resolveStart, reject) => {
          const child = spawn(BUN, [join(root, 'fixtures/job-instance/job-instance.ts'), url], {
            stdio: ['ignore', 'pipe', 'pipe'],
          })
          child.once('exit', (code) => reject(new Error(`job runner exited with ${code}`)))
          child.stdout!.on('data', (d) => {
            if (String(d).includes('ready')) resolveStart(child)
          })
        })
      try {
        const setup = new pg.Client({ connectionString: url })
        await setup.connect()
        await setup.query('create table test_job_effect (job_id text not null, runner text not null)')
        await setup.end()
        for (let i = 0; i < 200; i++) {
          await enqueueJob(database.db, Date.now(), {
            orgId: null,
            kind: 'test.effect',
            payload: { n: i },
            maxAttempts: 50,
            deadlineMs: 10_000,
          })
        }
        for (let i = 0; i < 3; i++) runners.push(await startRunner())
        // Kill one runner every 300 ms and start a fresh one, for about four seconds.
        for (let round = 0; round < 12; round++) {
          await new Promise((r) => setTimeout(r, 300))
          const victim = runners.splice(round % runners.length, 1)[0]!
          victim.removeAllListeners('exit')
          victim.kill('SIGKILL')
          runners.push(await startRunner())
        }
        const deadline = Date.now() + 60_000
        let open = 200
        while (Date.now() < deadline) {
          const row = await database.db
            .selectFrom('job')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('kind', '=', 'test.effect')
            .where('status', '!=', 'succeeded')
            .executeTakeFirstOrThrow()
          open = Number(row.n)
          if (open === 0) break
          await new Promise((r) => setTimeout(r, 200))
        }
        assert.is(open, 0, 'every job succeeded')
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        const effects = await client.query(
          'select count(*)::int as n, count(distinct job_id)::int as distinct_jobs from test_job_effect',
        )
        await client.end()
        assert.equal(effects.rows[0], { n: 200, distinct_jobs: 200 }, 'each job took effect exactly once')
      } finally {
        for (const child of runners) {
          child.removeAllListeners('exit')
          child.kill('SIGKILL')
        }
        await database.close()
      }
    })
  })
}

test.run()
