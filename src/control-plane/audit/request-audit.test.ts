/**
 * The request audit against the real database (SQLite, and PostgreSQL in its pass): the generic
 * event is written by the request's transaction before COMMIT (none when it rolls back), a
 * handler's own event in a later transaction replaces it, and the answer's failure marks it.
 */
import { sql } from 'kysely'
import { assert, suite } from '../../../tests/harness.ts'
import { observeCommits } from '../../storage/transaction-scope.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { silentLogger } from '../../core/logger.ts'
import type { AnyRoute } from '../../core/route.ts'
import { createRouteTable } from '../../core/router.ts'
import { auditedFetch } from './audited-surface.ts'
import { RequestAudit } from './request-audit.ts'

const test = suite('audit log: the request audit and its transactions', { timeoutMs: 60_000 })

const facts = (requestId: string) => ({
  requestId,
  route: 'POST /v1/things',
  action: 'createThing',
  target: { type: 'things', id: '' },
  origin: 'api' as const,
})

test('the generic event commits with the transaction, not with one that rolls back, and a failure marks it', async () => {
  const t = await startTestControlPlane()
  try {
    const db = t.app.database.db
    const rows = (id: string) => db.selectFrom('audit_event').selectAll().where('request_id', '=', id).execute()
    const audit = new RequestAudit(t.app.deps, facts('r-1'))
    await observeCommits(audit, async () => {
      await db
        .transaction()
        .execute(async (trx) => {
          await sql`select 1`.execute(trx)
          throw new Error('rolled back')
        })
        .catch(() => {})
      assert.is((await rows('r-1')).length, 0, 'a rolled-back transaction leaves no event')
      await db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx)
        assert.is((await rows('r-1')).length, 0, 'not visible before COMMIT')
      })
      assert.equal(
        (await rows('r-1')).map((e) => [e.action, e.outcome]),
        [['createThing', 'success']],
      )
      // A second transaction of the same request adds nothing.
      await db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx)
      })
    })
    await audit.finish({ status: 409, code: 'conflict' }, true)
    assert.equal(
      (await rows('r-1')).map((e) => [e.outcome, e.error_code]),
      [['failed', 'conflict']],
    )
  } finally {
    await t.close()
  }
})

test("a handler's own event in a later transaction replaces the generic one; a success with no transaction gets its own", async () => {
  const t = await startTestControlPlane()
  try {
    const db = t.app.database.db
    const rows = (id: string) => db.selectFrom('audit_event').selectAll().where('request_id', '=', id).execute()
    const audit = new RequestAudit(t.app.deps, facts('r-2'))
    audit.noteActor({ credential: 'session', orgId: null })
    await observeCommits(audit, async () => {
      await db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx)
      })
      assert.is((await rows('r-2')).length, 1)
      await db.transaction().execute(async (trx) => {
        audit.noteHandlerEvent(true)
        await trx
          .insertInto('audit_event')
          .values({
            id: 'aev_handler',
            org_id: null,
            action: 'thing.created',
            actor_user_id: null,
            actor_member_id: null,
            credential_kind: 'session',
            api_key_id: null,
            target_type: 'thing',
            target_id: 'x',
            data: null,
            created_at: new Date().toISOString(),
            origin: 'api',
            outcome: 'success',
            error_code: null,
            request_id: 'r-2',
            route: 'POST /v1/things',
          })
          .execute()
      })
    })
    await audit.finish({ status: 201, code: null }, true)
    assert.equal(
      (await rows('r-2')).map((e) => e.action),
      ['thing.created'],
    )
    const plain = new RequestAudit(t.app.deps, facts('r-3'))
    await plain.finish({ status: 204, code: null }, true)
    assert.equal(
      (await rows('r-3')).map((e) => [e.action, e.outcome]),
      [['createThing', 'success']],
    )
    const skipped = new RequestAudit(t.app.deps, facts('r-4'))
    await skipped.finish({ status: 401, code: 'unauthorized' }, false)
    assert.is((await rows('r-4')).length, 0)
  } finally {
    await t.close()
  }
})

test('a state-changing GET (the SSO callback) is audited with origin sso, a refusal redirect as denied with its code', async () => {
  const t = await startTestControlPlane()
  try {
    const callback = {
      method: 'GET',
      path: '/v1/sso/:orgSlug/callback',
      operationId: 'ssoCallback',
      summary: 'callback',
      auth: { kind: 'public' },
      responses: { 302: { description: 'redirect' } },
      handler: () => undefined,
    } as AnyRoute
    let location = '/console/#sso_error=sso_state_invalid'
    const fetch = auditedFetch(() => new Response(null, { status: 302, headers: { location } }), {
      deps: t.app.deps,
      table: createRouteTable([callback]),
      logger: silentLogger,
    })
    const get = async (id: string) => {
      await fetch(
        new Request(`http://plane.test/v1/sso/acme/callback?code=secret-code&state=s`, {
          headers: { 'x-request-id': id },
        }),
      )
      return t.app.database.db.selectFrom('audit_event').selectAll().where('request_id', '=', id).execute()
    }
    const refused = await get('sso-1')
    assert.equal(
      refused.map((e) => [e.action, e.origin, e.outcome, e.error_code, e.target_type, e.target_id, e.route]),
      [['ssoCallback', 'sso', 'denied', 'sso_state_invalid', 'sso', 'acme', 'GET /v1/sso/:orgSlug/callback']],
    )
    assert.not.ok(JSON.stringify(refused).includes('secret-code'), 'no query string is recorded')
    location = '/console/#sso_handoff=abc'
    assert.equal(
      (await get('sso-2')).map((e) => e.outcome),
      ['success'],
    )
  } finally {
    await t.close()
  }
})

test.run()
