/**
 * The durable job runner against a real control-plane database: retries with capped backoff,
 * final failures with their reason, deadlines, resume after a lapsed lease, exactly-once claims
 * across two runners, clean stop, and retry through the API.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { silentLogger } from '../../core/logger.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'
import { backoffDelay } from './backoff.ts'
import { enqueueJob, JobFailure } from './job-queue.ts'
import type { JobHandler } from './job-handler.ts'
import { JobRunner, UNEXPECTED_FAILURE, type JobRunnerSettings } from './job-runner.ts'

const test = suite('control-plane/jobs', { timeoutMs: 30_000 })

const SETTINGS: JobRunnerSettings = {
  pollIntervalMs: 20,
  leaseMs: 600,
  backoff: { baseMs: 30, capMs: 120, jitter: 0.2 },
  concurrency: 4,
  stopGraceMs: 100,
}

function runner(t: AsyncTestPlane, settings: Partial<JobRunnerSettings> = {}): JobRunner {
  return new JobRunner({
    db: t.app.deps.db,
    now: Date.now,
    settings: { ...SETTINGS, ...settings },
    logger: silentLogger,
  })
}

const jobRow = (t: AsyncTestPlane, id: string) =>
  t.app.deps.db.selectFrom('job').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

test('backoff grows exponentially, stays under its cap and is jittered', () => {
  const policy = { baseMs: 100, capMs: 1000, jitter: 0.2 }
  assert.is(
    backoffDelay(policy, 1, () => 0.5),
    100,
  )
  assert.is(
    backoffDelay(policy, 3, () => 0.5),
    400,
  )
  assert.is(
    backoffDelay(policy, 20, () => 0.5),
    1000,
  )
  assert.is(
    backoffDelay(policy, 2, () => 0),
    160,
  )
  assert.is(
    backoffDelay(policy, 2, () => 1),
    240,
  )
})

test('a retriable failure is retried with backoff until it succeeds', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    const starts: number[] = []
    r.register<{ failTimes: number }>({
      kind: 'test.flaky',
      async run(ctx) {
        starts.push(Date.now())
        if (ctx.attempt <= ctx.payload.failTimes) throw new JobFailure('flaky', `attempt ${ctx.attempt} failed`)
        return { ok: ctx.attempt }
      },
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.flaky',
      orgId: null,
      payload: { failTimes: 2 },
      maxAttempts: 5,
      deadlineMs: 5000,
    })
    r.start()
    const row = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'succeeded',
    )
    assert.is(row.status, 'succeeded')
    assert.is(row.attempts, 3)
    assert.equal(JSON.parse(row.result!), { ok: 3 })
    assert.is(row.last_reason, null)
    // Backoff after attempt 1 is ~30 ms and after attempt 2 ~60 ms (±20 %).
    assert.ok(starts[1]! - starts[0]! >= 24, `first retry waited ${starts[1]! - starts[0]!} ms`)
    assert.ok(starts[2]! - starts[1]! >= 48, `second retry waited ${starts[2]! - starts[1]!} ms`)
  } finally {
    await r.stop()
    await t.close()
  }
})

test('an unexpected exception is recorded as internal_error without its text, which only the server log gets', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    r.register({
      kind: 'test.throws',
      async run() {
        throw new Error('SQLITE_CONSTRAINT: UNIQUE failed at /srv/secret/path key k_123')
      },
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.throws',
      orgId: null,
      maxAttempts: 1,
      deadlineMs: 5000,
    })
    r.start()
    const row = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'failed',
    )
    assert.equal([row.last_reason, row.last_error], ['internal_error', UNEXPECTED_FAILURE])
  } finally {
    await r.stop()
    await t.close()
  }
})

test('the last attempt and a non-retriable failure end failed with their reason, and the handler hears it', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    const heard: Array<{ reason: string; final: boolean }> = []
    const handler = (kind: string, retriable: boolean): JobHandler => ({
      kind,
      async run() {
        throw new JobFailure(retriable ? 'remote_down' : 'bad_input', 'it broke', { retriable })
      },
      async onFailure(_trx, _job, failure) {
        heard.push({ reason: failure.reason, final: failure.final })
      },
    })
    r.register(handler('test.down', true))
    r.register(handler('test.bad', false))
    const down = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.down',
      orgId: null,
      maxAttempts: 3,
      deadlineMs: 5000,
    })
    const bad = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.bad',
      orgId: null,
      maxAttempts: 3,
      deadlineMs: 5000,
    })
    r.start()
    const downRow = await waitFor(
      () => jobRow(t, down),
      (j) => j.status === 'failed',
    )
    const badRow = await waitFor(
      () => jobRow(t, bad),
      (j) => j.status === 'failed',
    )
    assert.equal(
      [downRow.status, downRow.attempts, downRow.last_reason, downRow.last_error],
      ['failed', 3, 'remote_down', 'it broke'],
    )
    assert.equal([badRow.status, badRow.attempts, badRow.last_reason], ['failed', 1, 'bad_input'])
    assert.equal(
      heard.filter((h) => h.reason === 'remote_down').map((h) => h.final),
      [false, false, true],
    )
    assert.equal(
      heard.filter((h) => h.reason === 'bad_input').map((h) => h.final),
      [true],
    )
  } finally {
    await r.stop()
    await t.close()
  }
})

test('an attempt past its deadline is aborted and counted as deadline_exceeded', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    let sawAbort = false
    r.register({
      kind: 'test.hang',
      run: (ctx) =>
        new Promise((resolve) =>
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true
            resolve(undefined)
          }),
        ),
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.hang',
      orgId: null,
      maxAttempts: 1,
      deadlineMs: 100,
    })
    r.start()
    const row = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'failed',
    )
    assert.equal([row.status, row.last_reason], ['failed', 'deadline_exceeded'])
    assert.ok(sawAbort, 'the handler saw its signal abort')
  } finally {
    await r.stop()
    await t.close()
  }
})

test('a job left running by a dead runner is resumed once its lease lapses', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    let runs = 0
    r.register({
      kind: 'test.resume',
      async run() {
        runs++
        return 'done'
      },
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.resume',
      orgId: null,
      maxAttempts: 3,
      deadlineMs: 5000,
    })
    const lapsesAt = Date.now() + 300
    await t.app.deps.db
      .updateTable('job')
      .set({ status: 'running', attempts: 1, locked_by: 'run_dead', lease_until: new Date(lapsesAt).toISOString() })
      .where('id', '=', id)
      .execute()
    r.start()
    const row = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'succeeded',
    )
    assert.ok(Date.now() >= lapsesAt, 'not claimed before the lease lapsed')
    assert.equal([row.status, row.attempts, runs], ['succeeded', 2, 1])
  } finally {
    await r.stop()
    await t.close()
  }
})

test('a job whose last attempt lost its runner ends failed with lease_lapsed instead of running forever', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    let runs = 0
    const heard: string[] = []
    r.register({
      kind: 'test.poison',
      async run() {
        runs++
      },
      async onFailure(_trx, _job, failure) {
        heard.push(`${failure.reason}:${failure.final}`)
      },
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.poison',
      orgId: null,
      maxAttempts: 2,
      deadlineMs: 5000,
    })
    await t.app.deps.db
      .updateTable('job')
      .set({
        status: 'running',
        attempts: 2,
        locked_by: 'run_dead',
        lease_until: new Date(Date.now() - 1).toISOString(),
      })
      .where('id', '=', id)
      .execute()
    r.start()
    const row = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'failed',
    )
    assert.equal([row.status, row.last_reason, row.attempts, runs], ['failed', 'lease_lapsed', 2, 0])
    assert.equal(heard, ['lease_lapsed:true'])
  } finally {
    await r.stop()
    await t.close()
  }
})

test('two runners on one database run each job exactly once', async () => {
  const t = await startAsyncTestPlane()
  const a = runner(t)
  const b = runner(t)
  try {
    const runs = new Map<string, number>()
    const handler: JobHandler = {
      kind: 'test.once',
      async run(ctx) {
        runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1)
        await new Promise((r) => setTimeout(r, 2))
        return null
      },
    }
    a.register(handler)
    b.register(handler)
    const ids: string[] = []
    for (let i = 0; i < 60; i++)
      ids.push(
        await enqueueJob(t.app.deps.db, Date.now(), {
          kind: 'test.once',
          orgId: null,
          maxAttempts: 1,
          deadlineMs: 5000,
        }),
      )
    a.start()
    b.start()
    await waitFor(
      () =>
        t.app.deps.db
          .selectFrom('job')
          .select('id')
          .where('kind', '=', 'test.once')
          .where('status', '=', 'succeeded')
          .execute(),
      (rows) => rows.length === 60,
    )
    assert.is(runs.size, 60)
    assert.ok(
      [...runs.values()].every((n) => n === 1),
      'no job ran twice',
    )
  } finally {
    await a.stop()
    await b.stop()
    await t.close()
  }
})

test('stop hands a running attempt back to the queue without counting it', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    let started = false
    r.register({
      kind: 'test.slow',
      run: (ctx) =>
        new Promise((resolve) => {
          started = true
          ctx.signal.addEventListener('abort', () => resolve(undefined))
        }),
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.slow',
      orgId: null,
      maxAttempts: 3,
      deadlineMs: 60_000,
    })
    r.start()
    await waitFor(
      async () => started,
      (s) => s,
    )
    await r.stop()
    const row = await jobRow(t, id)
    assert.equal([row.status, row.attempts, row.locked_by], ['queued', 0, null])
    assert.is(r.activeCount, 0)
  } finally {
    await t.close()
  }
})

test('a failed job is visible and retriable through the API; a succeeded one is not retriable', async () => {
  const t = await startAsyncTestPlane()
  const r = runner(t)
  try {
    const org = await buildFixtureOrg(t.client, 'jobs')
    let fail = true
    r.register({
      kind: 'test.api',
      async run() {
        if (fail) throw new JobFailure('upstream_refused', 'no', { retriable: false })
        return 'ok'
      },
    })
    const id = await enqueueJob(t.app.deps.db, Date.now(), {
      kind: 'test.api',
      orgId: org.orgId,
      maxAttempts: 2,
      deadlineMs: 5000,
    })
    r.start()
    await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'failed',
    )
    const listed = await t.client.get('/v1/jobs?status=failed', { token: org.owner.token })
    assert.equal(
      listed.body.items.map((j: { id: string }) => j.id),
      [id],
    )
    const seen = await t.client.get(`/v1/jobs/${id}`, { apiKey: org.adminKey.key })
    assert.equal(seen.body.item.lastError, { reason: 'upstream_refused', message: 'no' })
    assert.is((await t.client.get(`/v1/jobs/${id}`, { token: org.member.token })).status, 403)
    fail = false
    const retried = await t.client.post(`/v1/jobs/${id}/retry`, { token: org.admin.token })
    assert.is(retried.status, 202)
    assert.equal([retried.body.item.status, retried.body.item.attempts], ['queued', 0])
    r.wake()
    const done = await waitFor(
      () => jobRow(t, id),
      (j) => j.status === 'succeeded',
    )
    assert.is(done.status, 'succeeded')
    const again = await t.client.post(`/v1/jobs/${id}/retry`, { token: org.admin.token })
    assert.equal([again.status, again.body.code], [409, 'job_not_retriable'])
    const other = await buildFixtureOrg(t.client, 'jobs-other')
    assert.is((await t.client.get(`/v1/jobs/${id}`, { token: other.owner.token })).status, 404)
  } finally {
    await r.stop()
    await t.close()
  }
})

test.run()
