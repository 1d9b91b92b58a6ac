/**
 * The audit log over HTTP on a real control plane (SQLite, and PostgreSQL in its pass): one event
 * per write request with its outcome and request id, refused sign-ins, filters and cursor pages,
 * the streamed export in both formats past one batch, the retention sweep, and no secret in any
 * stored event.
 */
import { newId } from '../../core/ids.ts'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { loadControlPlaneConfig } from '../config.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { csvCell, EXPORT_BATCH } from './audit-query.ts'
import { sweepOldAuditEvents } from './audit-retention.ts'

const test = suite('audit log: every write, filters, export, retention', { timeoutMs: 120_000 })

async function eventsOf(t: TestControlPlane, requestId: string) {
  return t.app.database.db.selectFrom('audit_event').selectAll().where('request_id', '=', requestId).execute()
}

async function send(
  t: TestControlPlane,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; requestId: string; body: any; text: string; headers: Headers }> {
  const requestId = `test-${newId('req')}`
  const headers: Record<string, string> = { 'x-request-id': requestId, ...options.headers }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.json !== undefined) headers['content-type'] = 'application/json'
  const response = await t.app.fetch(
    new Request(`http://plane.test${path}`, {
      method,
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
    }),
  )
  const text = await response.text()
  let body: unknown = null
  try {
    body = JSON.parse(text)
  } catch {
    // Not JSON (an export).
  }
  return { status: response.status, requestId, body, text, headers: response.headers }
}

async function withOrg(run: (t: TestControlPlane, org: FixtureOrg) => Promise<void>): Promise<void> {
  const t = await startTestControlPlane()
  try {
    await run(t, await buildFixtureOrg(t.client, 'audit'))
  } finally {
    await t.close()
  }
}

test('a handler-audited write keeps its named event and gets no second one, with request id, route and origin', async () => {
  await withOrg(async (t, org) => {
    const created = await send(t, 'POST', '/v1/teams', { token: org.owner.token, json: { name: 'Ops' } })
    assert.is(created.status, 201)
    const events = await eventsOf(t, created.requestId)
    assert.equal(
      events.map((e) => [e.action, e.outcome, e.origin, e.route, e.credential_kind, e.actor_user_id]),
      [['team.created', 'success', 'api', 'POST /v1/teams', 'session', org.owner.userId]],
    )
    const fromConsole = await send(t, 'POST', '/v1/teams', {
      token: org.owner.token,
      json: { name: 'Console team' },
      headers: { 'x-service-client': 'console' },
    })
    assert.equal(
      (await eventsOf(t, fromConsole.requestId)).map((e) => e.origin),
      ['console'],
    )
  })
})

test('a write without a named action gets one generic event; refusals and failures are recorded with their code', async () => {
  await withOrg(async (t, org) => {
    const switched = await send(t, 'POST', '/v1/me/active-org', {
      token: org.owner.token,
      json: { organizationId: org.orgId },
    })
    assert.ok(switched.status < 300, `active-org answered ${switched.status}`)
    const generic = await eventsOf(t, switched.requestId)
    assert.equal(
      generic.map((e) => [e.action, e.outcome, e.org_id]),
      [['setActiveOrganization', 'success', org.orgId]],
      JSON.stringify(generic),
    )
    const denied = await send(t, 'POST', '/v1/invitations', {
      token: org.member.token,
      json: { email: 'x@audit.test', role: 'member' },
    })
    assert.is(denied.status, 403)
    const deniedEvents = await eventsOf(t, denied.requestId)
    assert.equal(
      deniedEvents.map((e) => [e.action, e.outcome, e.error_code, e.actor_member_id, e.org_id]),
      [['createInvitation', 'denied', 'forbidden', org.member.memberId, org.orgId]],
    )
    const team = await send(t, 'POST', '/v1/teams', { token: org.owner.token, json: { name: 'Gone' } })
    const teamId: string = team.body.item.id
    assert.is((await send(t, 'DELETE', `/v1/teams/${teamId}`, { token: org.owner.token })).status, 204)
    const missing = await send(t, 'DELETE', `/v1/teams/${teamId}`, { token: org.owner.token })
    assert.is(missing.status, 404)
    const failed = await eventsOf(t, missing.requestId)
    assert.equal(
      failed.map((e) => [e.action, e.outcome, e.error_code, e.target_type, e.target_id]),
      [['deleteTeam', 'failed', 'team_not_found', 'teams', teamId]],
    )
    // A caller that never proved who it is leaves nothing.
    const anonymous = await send(t, 'POST', '/v1/teams', { json: { name: 'x' } })
    assert.is(anonymous.status, 401)
    assert.is((await eventsOf(t, anonymous.requestId)).length, 0)
  })
})

test('sign-in, refused sign-in and sign-out are recorded, and the org sees its member’s refused sign-in; no secret is stored', async () => {
  await withOrg(async (t, org) => {
    const wrong = await send(t, 'POST', '/v1/auth/sign-in', {
      json: { email: org.member.email, password: 'wrong-password-value' },
    })
    assert.is(wrong.status, 401)
    const refused = await eventsOf(t, wrong.requestId)
    assert.equal(
      refused.map((e) => [e.action, e.outcome, e.error_code, e.credential_kind, e.actor_user_id, e.org_id]),
      [['signIn', 'denied', 'unauthorized', 'anonymous', org.member.userId, null]],
    )
    const unknown = await send(t, 'POST', '/v1/auth/sign-in', {
      json: { email: 'nobody@audit.test', password: 'whatever-password' },
    })
    assert.equal(
      (await eventsOf(t, unknown.requestId)).map((e) => [e.outcome, e.actor_user_id]),
      [['denied', null]],
    )
    const right = await send(t, 'POST', '/v1/auth/sign-in', {
      json: { email: org.member.email, password: org.member.password },
    })
    assert.is(right.status, 200)
    const token: string = right.body.session.token
    assert.equal(
      (await eventsOf(t, right.requestId)).map((e) => [e.action, e.outcome, e.actor_user_id]),
      [['signIn', 'success', org.member.userId]],
    )
    const out = await send(t, 'POST', '/v1/auth/sign-out', { token })
    assert.is(out.status, 204)
    assert.equal(
      (await eventsOf(t, out.requestId)).map((e) => [e.action, e.outcome, e.actor_user_id]),
      [['signOut', 'success', org.member.userId]],
    )
    const listed = await send(t, 'GET', `/v1/audit-events?requestId=${wrong.requestId}`, { token: org.owner.token })
    assert.is(listed.status, 200)
    assert.equal(
      listed.body.items.map((e: any) => [e.action, e.outcome, e.errorCode, e.actor.credential]),
      [['signIn', 'denied', 'unauthorized', 'anonymous']],
    )
    const key = await send(t, 'POST', '/v1/api-keys', { token: org.owner.token, json: { name: 'k' } })
    const everything = JSON.stringify(await t.app.database.db.selectFrom('audit_event').selectAll().execute())
    for (const secret of [
      org.member.password,
      'wrong-password-value',
      token,
      org.owner.token,
      org.ownerKey.key,
      key.body.key as string,
    ])
      assert.not.ok(everything.includes(secret), 'a secret reached the audit log')
  })
})

test('the list filters by actor, action, target, outcome, origin and time, in cursor pages', async () => {
  await withOrg(async (t, org) => {
    const from = new Date(t.clock.now()).toISOString()
    const teamIds: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await send(t, 'POST', '/v1/teams', { token: org.admin.token, json: { name: `Team ${i}` } })
      teamIds.push(res.body.item.id)
      t.clock.advance(1000)
    }
    await send(t, 'POST', '/v1/invitations', {
      token: org.member.token,
      json: { email: 'y@audit.test', role: 'member' },
    })
    const get = (query: string) => send(t, 'GET', `/v1/audit-events?${query}`, { token: org.owner.token })
    const byAdmin = await get(`actor=${org.admin.userId}&action=team.created&limit=2`)
    assert.is(byAdmin.body.items.length, 2)
    const seen: string[] = byAdmin.body.items.map((e: any) => e.target.id)
    let cursor = byAdmin.body.nextCursor
    while (cursor) {
      const next = await get(
        `actor=${org.admin.userId}&action=team.created&limit=2&cursor=${encodeURIComponent(cursor)}`,
      )
      seen.push(...next.body.items.map((e: any) => e.target.id))
      cursor = next.body.nextCursor
    }
    assert.equal(seen, [...teamIds].reverse(), 'newest first, every team once across pages')
    const byMember = await get(`actor=${org.admin.memberId}&targetType=team&targetId=${teamIds[2]}`)
    assert.equal(
      byMember.body.items.map((e: any) => e.target.id),
      [teamIds[2]],
    )
    const denied = await get('outcome=denied')
    assert.equal(
      denied.body.items.map((e: any) => e.action),
      ['createInvitation'],
    )
    const window = await get(
      `action=team.created&since=${encodeURIComponent(new Date(Date.parse(from) + 1000).toISOString())}&until=${encodeURIComponent(new Date(Date.parse(from) + 3000).toISOString())}`,
    )
    assert.equal(
      window.body.items.map((e: any) => e.target.id),
      [teamIds[2], teamIds[1]],
    )
    assert.is((await get('origin=mcp')).body.items.length, 0)
    assert.ok((await get('origin=api')).body.items.length > 0)
    const wrongCursor = await get(`action=team.created&cursor=${encodeURIComponent(byAdmin.body.nextCursor)}`)
    assert.is(wrongCursor.status, 400)
    const notAdmin = await send(t, 'GET', '/v1/audit-events', { token: org.member.token })
    assert.is(notAdmin.status, 403)
  })
})

test('the export streams a range larger than one batch as NDJSON and as CSV, formula-safe', async () => {
  await withOrg(async (t, org) => {
    const db = t.app.database.db
    const total = EXPORT_BATCH * 2 + 37
    const base = Date.parse('2026-01-01T00:00:00Z')
    const rows = Array.from({ length: total }, (_, i) => ({
      id: newId('aev'),
      org_id: org.orgId,
      action: i === 3 ? '=HYPERLINK("http://evil.test")' : 'bulk.event',
      actor_user_id: org.owner.userId,
      actor_member_id: org.owner.memberId,
      credential_kind: 'session',
      api_key_id: null,
      target_type: 'team',
      target_id: i === 4 ? 'has,comma "and quotes"\nand a line' : `t${i}`,
      data: null,
      created_at: new Date(base + i * 1000).toISOString(),
      origin: 'api',
      outcome: 'success',
      error_code: null,
      request_id: `bulk-${i}`,
      route: 'POST /v1/teams',
    }))
    for (let i = 0; i < rows.length; i += 100)
      await db
        .insertInto('audit_event')
        .values(rows.slice(i, i + 100))
        .execute()
    const range = `since=2026-01-01T00:00:00Z&until=${encodeURIComponent(new Date(base + total * 1000).toISOString())}`
    const ndjson = await send(t, 'GET', `/v1/audit-events/export?format=ndjson&${range}`, { token: org.owner.token })
    assert.is(ndjson.status, 200)
    assert.is(ndjson.headers.get('content-type'), 'application/x-ndjson')
    const lines = ndjson.text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.is(lines.length, total)
    assert.equal(
      lines.map((e) => e.requestId),
      rows.map((r) => r.request_id),
      'oldest first, each once',
    )
    const csv = await send(t, 'GET', `/v1/audit-events/export?format=csv&${range}`, { token: org.owner.token })
    assert.is(csv.status, 200)
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/)
    assert.match(csv.headers.get('content-disposition') ?? '', /attachment; filename="audit-events-.*\.csv"/)
    const records = csv.text.split('\r\n').filter((line) => line.startsWith('aev_'))
    // Row 4's cell has a quoted line break: it spans two physical lines, one starting with aev_.
    assert.is(records.length, total)
    assert.match(csv.text, /,'=HYPERLINK\(""http:\/\/evil\.test""\)",|,"'=HYPERLINK\(""http:\/\/evil\.test""\)",/)
    assert.ok(csv.text.includes('"has,comma ""and quotes""\nand a line"'))
    assert.ok(csv.text.startsWith('id,createdAt,action,outcome,errorCode,credential'))
    const bad = await send(t, 'GET', '/v1/audit-events/export?format=xml', { token: org.owner.token })
    assert.is(bad.status, 422)
  })
})

test('CSV cells are quoted and formula-safe', () => {
  assert.is(csvCell('plain'), 'plain')
  assert.is(csvCell(null), '')
  assert.is(csvCell('a,b'), '"a,b"')
  assert.is(csvCell('say "hi"'), '"say ""hi"""')
  assert.is(csvCell('=1+2'), "'=1+2")
  assert.is(csvCell('+1'), "'+1")
  assert.is(csvCell('-1'), "'-1")
  assert.is(csvCell('@SUM(A1)'), "'@SUM(A1)")
  assert.is(csvCell('\tx'), "'\tx")
  assert.is(csvCell('=a,b'), `"'=a,b"`)
})

test('the retention sweep deletes only events older than the setting, in batches, twice safely', async () => {
  await withOrg(async (t, org) => {
    const db = t.app.database.db
    const old = new Date(t.clock.now() - 400 * 24 * 3600_000)
    const rows = Array.from({ length: 250 }, (_, i) => ({
      id: newId('aev'),
      org_id: org.orgId,
      action: 'old.event',
      actor_user_id: null,
      actor_member_id: null,
      credential_kind: 'session',
      api_key_id: null,
      target_type: 'team',
      target_id: `t${i}`,
      data: null,
      created_at: new Date(old.getTime() + i).toISOString(),
      origin: 'api',
      outcome: 'success',
      error_code: null,
      request_id: null,
      route: null,
    }))
    for (let i = 0; i < rows.length; i += 100)
      await db
        .insertInto('audit_event')
        .values(rows.slice(i, i + 100))
        .execute()
    const recent = await db.selectFrom('audit_event').select('id').where('action', '!=', 'old.event').execute()
    assert.ok(recent.length > 0)
    const [a, b] = await Promise.all([
      sweepOldAuditEvents(t.app.deps, 365, 40),
      sweepOldAuditEvents(t.app.deps, 365, 40),
    ])
    assert.is(a + b, 250, 'two sweepers delete each old row once')
    const left = await db.selectFrom('audit_event').select('id').execute()
    assert.is(left.length, recent.length)
    assert.is(await sweepOldAuditEvents(t.app.deps, 365), 0)
  })
})

test('the retention setting comes from SERVICE_AUDIT_RETENTION_DAYS, default 365, and refuses zero', () => {
  const dir = tempDir('svc-audit-config-')
  try {
    assert.is(loadControlPlaneConfig({}, {}, dir.path).auditRetentionDays, 365)
    assert.is(loadControlPlaneConfig({}, { SERVICE_AUDIT_RETENTION_DAYS: '30' }, dir.path).auditRetentionDays, 30)
    assert.throws(() => loadControlPlaneConfig({}, { SERVICE_AUDIT_RETENTION_DAYS: '0' }, dir.path))
  } finally {
    dir.remove()
  }
})

test.run()
