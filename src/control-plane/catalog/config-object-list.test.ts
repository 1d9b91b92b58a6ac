/**
 * `GET /v1/config-objects`: each filter narrows to exactly the matching objects, the database
 * answers every filter from an index (checked with the query plan, as the pagination suite does),
 * and cursor paging visits every object exactly once while objects are being added.
 */
import { Buffer } from 'node:buffer'
import { type Kysely, sql } from 'kysely'
import { assert, suite } from '../../../tests/harness.ts'
import { newId } from '../../core/ids.ts'
import type { Actor } from '../admin/audit.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { queryPlan } from '../testing/query-plan.ts'
import { TEST_ENGINE } from '../testing/test-database.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { listConfigObjects } from './config-objects.ts'
import { insertConfigObject } from './config-store.ts'

const test = suite('control-plane/config-object-list', { timeoutMs: 60_000 })

const skill = (name: string, words = '') =>
  `---\nname: ${name}\ndescription: Skill ${name} ${words}\n---\n\nBody of ${name}.\n`

async function ids(t: TestControlPlane, token: string, query: string): Promise<string[]> {
  const out: string[] = []
  let cursor: string | null = null
  do {
    const res = await t.client.get(`/v1/config-objects?limit=3${query}${cursor ? `&cursor=${cursor}` : ''}`, { token })
    assert.is(res.status, 200, `${query}: ${JSON.stringify(res.body)}`)
    out.push(...res.body.items.map((i: { id: string }) => i.id))
    cursor = res.body.nextCursor
  } while (cursor)
  return out
}

test('every filter narrows the list to exactly the objects that match it', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'filters')
    const token = org.owner.token
    const made: Array<{
      id: string
      type: string
      status: string
      sourceMode: string
      plugin: boolean
      connector: string | null
      words: string
    }> = []
    const plugin = (await t.client.post('/v1/plugins', { token, json: { name: 'Bundle' } })).body.item.id
    const specs = [
      { type: 'skill', sourceMode: 'cloud', words: 'pdf tables', plugin: true },
      { type: 'skill', sourceMode: 'import', words: 'spreadsheets', plugin: false },
      { type: 'command', sourceMode: 'cloud', words: 'deploy', plugin: true },
      { type: 'context', sourceMode: 'import', words: 'pdf conventions', plugin: false },
      { type: 'skill', sourceMode: 'cloud', words: 'images', plugin: false },
      { type: 'custom', sourceMode: 'cloud', words: 'profile', plugin: false },
    ]
    for (const [i, s] of specs.entries()) {
      const input =
        s.type === 'skill'
          ? { rawSourceText: skill(`s${i}`, s.words) }
          : s.type === 'custom'
            ? { normalizedPayload: { about: s.words } }
            : { rawSourceText: `About ${s.words}` }
      const res = await t.client.post('/v1/config-objects', {
        token,
        json: {
          type: s.type,
          sourceMode: s.sourceMode,
          title: `Object ${i}`,
          input,
          ...(s.plugin ? { pluginIds: [plugin] } : {}),
        },
      })
      assert.is(res.status, 201, JSON.stringify(res.body))
      made.push({
        id: res.body.item.id,
        type: s.type,
        status: 'active',
        sourceMode: s.sourceMode,
        plugin: s.plugin,
        connector: null,
        words: s.words,
      })
    }
    // Connector-owned objects come from sync (issue 8) through the store API.
    const connectorId = 'cin_01jtestconnectorinstance0'
    for (let i = 0; i < 2; i++) {
      const created = await t.app.deps.db
        .transaction()
        .execute((trx) =>
          insertConfigObject(
            t.app.deps,
            trx,
            { orgId: org.orgId, memberId: null },
            { type: 'skill', title: `Synced ${i}`, input: { rawSourceText: skill(`synced-${i}`, 'pdf') } },
            { sourceMode: 'connector', connectorInstanceId: connectorId },
          ),
        )
      made.push({
        id: created.id,
        type: 'skill',
        status: 'active',
        sourceMode: 'connector',
        plugin: false,
        connector: connectorId,
        words: 'pdf',
      })
    }
    await t.client.post(`/v1/config-objects/${made[1]!.id}/archive`, { token })
    made[1]!.status = 'archived'
    await t.client.post(`/v1/config-objects/${made[4]!.id}/delete`, { token })
    made[4]!.status = 'deleted'

    const expect = (pred: (m: (typeof made)[number]) => boolean) => made.filter(pred).map((m) => m.id)
    const live = (m: (typeof made)[number]) => m.status !== 'deleted'
    const cases: Array<[string, string[]]> = [
      ['', expect(live)],
      ['&type=skill', expect((m) => live(m) && m.type === 'skill')],
      ['&type=command', expect((m) => live(m) && m.type === 'command')],
      ['&status=archived', expect((m) => m.status === 'archived')],
      ['&status=active', expect((m) => m.status === 'active')],
      ['&status=deleted', expect((m) => m.status === 'deleted')],
      ['&status=deleted&deleted=exclude', []],
      ['&sourceMode=import', expect((m) => live(m) && m.sourceMode === 'import')],
      ['&sourceMode=connector', expect((m) => live(m) && m.sourceMode === 'connector')],
      [`&plugin=${plugin}`, expect((m) => live(m) && m.plugin)],
      [`&connectorInstance=${connectorId}`, expect((m) => live(m) && m.connector === connectorId)],
      ['&deleted=include', expect(() => true)],
      ['&deleted=only', expect((m) => m.status === 'deleted')],
      ['&q=pdf', expect((m) => live(m) && m.words.includes('pdf'))],
      ['&q=PDF%20tab', expect((m) => live(m) && m.words.includes('pdf tables'))],
      ['&q=conv', expect((m) => live(m) && m.words.includes('conventions'))],
      ['&q=nothing-matches-this', []],
      ['&q=%2B%2B', []],
      [
        '&type=skill&sourceMode=cloud&q=pdf',
        expect((m) => live(m) && m.type === 'skill' && m.sourceMode === 'cloud' && m.words.includes('pdf')),
      ],
      ['&type=skill&deleted=only', expect((m) => m.type === 'skill' && m.status === 'deleted')],
    ]
    for (const [query, expected] of cases) assert.equal(await ids(t, token, query), expected, query || '(no filter)')
    // Each filter actually narrowed something.
    for (const [query, expected] of cases.filter(([q]) => q !== '&deleted=include'))
      assert.ok(expected.length < made.length, `${query || '(default)'} narrows`)
    for (const bad of [
      '&limit=0',
      '&limit=101',
      '&limit=2.5',
      '&type=widget',
      '&deleted=maybe',
      '&status=gone',
      '&plugin=nope',
    ]) {
      const res = await t.client.get(`/v1/config-objects?${bad.slice(1)}`, { token })
      assert.is(res.status, 422, bad)
    }
    const foreign = await t.client.get('/v1/config-objects?cursor=eyJzIjoidGVhbXMiLCJrIjpbInRlYW1fMSJdfQ', { token })
    assert.is(foreign.status, 400)
    assert.is(foreign.body.code, 'invalid_cursor')
  } finally {
    await t.close()
  }
})

test('each filter is answered from an index, never by scanning the table or sorting in memory', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'plans')
    const actor: Actor = {
      orgId: org.orgId,
      userId: org.owner.userId,
      memberId: org.owner.memberId,
      role: 'owner',
      credential: 'session',
      apiKeyId: null,
    }
    // Enough rows that the planner has statistics worth using.
    await t.app.deps.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 300; i++) {
        await insertConfigObject(
          t.app.deps,
          trx,
          { orgId: org.orgId, memberId: null },
          {
            type: i % 3 === 0 ? 'skill' : 'custom',
            title: `Object ${i}`,
            input: i % 3 === 0 ? { rawSourceText: skill(`n${i}`) } : { normalizedPayload: { i } },
          },
          { sourceMode: i % 2 ? 'cloud' : 'import' },
        )
      }
    })
    await sql`analyze`.execute(t.app.deps.db)
    const cursor = Buffer.from(JSON.stringify({ s: 'config-objects', k: [newId('cob')] })).toString('base64url')
    // A handle with a (pass-through) plugin sends every query through its executor, where listSql
    // sees it; the plain handle reads prepared lists straight on SQLite's read connection, with the
    // same SQL.
    const observed = t.app.deps.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => args.result,
    })
    const filters: Array<[string, Record<string, unknown>, RegExp]> = [
      ['none', {}, /config_object_org_(id|status)_idx/],
      ['type', { type: 'skill' }, /config_object_org_type_idx/],
      ['status', { status: 'archived' }, /config_object_org_status_idx/],
      ['sourceMode', { sourceMode: 'import' }, /config_object_org_(source|status)_idx/],
      ['connectorInstance', { connectorInstanceId: 'cin_x' }, /config_object_org_connector_idx/],
      ['deleted only', { deleted: 'only' }, /config_object_org_status_idx/],
      ['q', { q: 'object' }, /config_object_term/],
      ['plugin', { pluginId: 'plg_x' }, /plugin_config_object/],
    ]
    for (const [label, filter, index] of filters) {
      for (const withCursor of [false, true]) {
        const query = await listSql(observed, async () =>
          listConfigObjects({ ...t.app.deps, db: observed }, actor, {
            limit: 50,
            ...(withCursor ? { cursor } : {}),
            ...filter,
          } as never),
        )
        const plan = await queryPlan(t.app.deps.db, query as never)
        const detail = plan.text
        const where = `${label}${withCursor ? ' + cursor' : ''}: ${detail}`
        // PostgreSQL's planner is cost-based: on a one-organization test table it may walk the primary
        // key in id order instead of the (org_id, …, id) index; both are ordered index walks without a sort.
        if (TEST_ENGINE === 'sqlite' || !/config_object_pkey/.test(detail)) assert.match(detail, index, where)
        // A full scan of config_object: "SCAN co" without an index on SQLite, "Seq Scan on config_object" on PostgreSQL.
        assert.not.match(detail, /SCAN co\b(?! USING)|Seq Scan on config_object\b/, where)
        if (!['q', 'plugin'].includes(label)) assert.not.ok(plan.sorts, where)
      }
    }
  } finally {
    await t.close()
  }
})

/** The SQL of the config-object list query that `run` executes (captured at the executor). */
async function listSql(
  db: Kysely<ControlPlaneDb>,
  run: () => Promise<unknown>,
): Promise<{ sql: string; parameters: readonly unknown[]; query: unknown }> {
  const executor = db.getExecutor() as unknown as {
    executeQuery: (q: { sql: string; parameters: readonly unknown[]; query: unknown }) => Promise<unknown>
  }
  const original = executor.executeQuery
  let captured: { sql: string; parameters: readonly unknown[]; query: unknown } | null = null
  executor.executeQuery = function (q) {
    if (!captured && /from "config_object" as "co"/.test(q.sql)) captured = q
    return original.call(this, q)
  }
  try {
    await run()
  } finally {
    executor.executeQuery = original
  }
  if (!captured) throw new Error('the list query did not run')
  return captured
}

test('paging visits every object exactly once while other objects are being added', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'paging')
    const token = org.member.token
    const initial: string[] = []
    for (let i = 0; i < 23; i++)
      initial.push(
        (
          await t.client.post('/v1/config-objects', {
            token,
            json: { type: 'context', sourceMode: 'cloud', title: `C${i}`, input: { rawSourceText: `c${i}` } },
          })
        ).body.item.id,
      )
    const seen: string[] = []
    const added: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await t.client.get(`/v1/config-objects?type=context&limit=4${cursor ? `&cursor=${cursor}` : ''}`, {
        token,
      })
      seen.push(...res.body.items.map((i: { id: string }) => i.id))
      cursor = res.body.nextCursor
      // Someone keeps adding while the client pages (until the tenth page, so it ends).
      if (pages++ < 10)
        added.push(
          (
            await t.client.post('/v1/config-objects', {
              token: org.owner.token,
              json: {
                type: 'context',
                sourceMode: 'cloud',
                title: `New ${pages}`,
                input: { rawSourceText: `new ${pages}` },
              },
            })
          ).body.item.id,
        )
    } while (cursor)
    assert.is(new Set(seen).size, seen.length, 'no object twice')
    assert.ok(
      initial.every((id) => seen.includes(id)),
      'every object present at the start is visited',
    )
    // The owner's additions are invisible to the member (no grant): visibility filtering happens in the query.
    assert.not.ok(added.some((id) => seen.includes(id)))
    // The same walk as the owner sees the added objects, still each once.
    const ownerSeen = await ids(t, org.owner.token, '&type=context')
    assert.equal(ownerSeen, [...initial, ...added])
  } finally {
    await t.close()
  }
})

test.run()
