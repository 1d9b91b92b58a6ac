import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { AuthThrottle } from '../access/auth-throttle.ts'
import { EventStore } from '../events/event-store.ts'
import { openStateDatabase } from '../base/state-db.ts'
import { TokenStore } from '../access/token-store.ts'

const test = suite('workspace/stores')

test('the throttle locks an address after maxFailures inside the window, then lets it try again', () => {
  let now = 0
  const throttle = new AuthThrottle({ maxFailures: 3, windowSeconds: 10, lockoutSeconds: 5 }, () => now)
  throttle.fail('a')
  now += 11_000
  throttle.fail('a')
  throttle.fail('a')
  assert.is(throttle.retryAfter('a'), 0, 'the first failure left the window')
  assert.is(throttle.fail('a'), 5)
  assert.is(throttle.retryAfter('a'), 5)
  assert.is(throttle.retryAfter('b'), 0)
  now += 5_000
  assert.is(throttle.retryAfter('a'), 0)
})

test('events keep a global seq, filter by workspace and are pruned to the retention limit', async () => {
  await withTempDir(async (dir) => {
    const db = await openStateDatabase(dir)
    try {
      const store = new EventStore(db, { retention: 10 })
      const seen: number[] = []
      store.subscribe((e) => seen.push(e.seq))
      const appended = await Promise.all(
        Array.from({ length: 70 }, (_, i) =>
          store.append({ workspaceId: i % 2 ? 'ws_b' : 'ws_a', type: 'reload', reason: 'config' }),
        ),
      )
      assert.equal(
        seen,
        appended.map((e) => e.seq),
      )
      assert.ok(
        seen.every((s, i) => i === 0 || s > seen[i - 1]!),
        'subscribers see increasing seq',
      )
      await store.prune('ws_a')
      const a = await store.list({ after: 0, workspaceId: 'ws_a' })
      assert.is(a.length, 10)
      assert.ok(a.every((e) => e.workspaceId === 'ws_a'))
      assert.is(await store.latestSeq(), appended[69]!.seq)
    } finally {
      await db.close()
    }
  })
})

test('token lookups distinguish valid, expired and unknown and survive reopening', async () => {
  await withTempDir(async (dir) => {
    let now = 1_000_000
    const db = await openStateDatabase(dir)
    try {
      const store = await TokenStore.open(db, () => now)
      const token = await store.create({ scope: 'viewer', ttlSeconds: 5 })
      assert.is(store.lookup(token.token).status, 'valid')
      assert.is(store.lookup('nope').status, 'unknown')
      const reopened = await TokenStore.open(db, () => now)
      assert.equal(
        reopened.list().map((t) => t.id),
        [token.id],
      )
      now += 5_000
      assert.is(reopened.lookup(token.token).status, 'expired')
      assert.is(await reopened.revoke(token.id), true)
      assert.is(await reopened.revoke(token.id), false)
    } finally {
      await db.close()
    }
  })
})

test.run()

const approvals = suite('workspace/approval-service')

approvals('pending approvals are capped, and closing ends them with 503 server_stopping', async () => {
  const { ApprovalService, MAX_PENDING } = await import('../approvals/approvals.ts')
  const { AuditLog } = await import('../events/audit-log.ts')
  const db = await openStateDatabase(':memory:')
  try {
    const events = new EventStore(db)
    const service = new ApprovalService({ mode: 'manual', timeoutMs: 60_000 }, { events, audit: new AuditLog(db) })
    const input = {
      workspaceId: 'ws_x',
      action: 'skills.upsert',
      summary: 's',
      paths: [],
      actor: { type: 'remote' as const, scope: 'collaborator' as const },
    }
    const waiting = Array.from({ length: MAX_PENDING }, () => service.request(input))
    await events.drain()
    assert.is(service.list().length, MAX_PENDING)
    try {
      await service.request(input)
      assert.unreachable('the cap should refuse')
    } catch (error) {
      assert.is((error as { status: number }).status, 429)
    }
    service.close()
    const outcomes = await Promise.allSettled(waiting)
    assert.ok(
      outcomes.every((o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'server_stopping'),
    )
    assert.is(service.list().length, 0)
  } finally {
    await db.close()
  }
})

approvals.run()
