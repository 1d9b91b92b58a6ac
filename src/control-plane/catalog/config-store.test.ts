/**
 * The plain-data store API that connector sync (issue 8) uses to create and version config
 * objects inside its own transactions: provenance is kept per version, history is append-only,
 * concurrent appends on one base produce exactly one winner, and source validation applies to
 * sync exactly as to the API.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { ApiError } from '../../core/errors.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import {
  appendVersionIn,
  changeLifecycleIn,
  findConfigObject,
  findConfigObjectsByConnector,
  insertConfigObject,
} from './config-store.ts'

const test = suite('control-plane/config-store', { timeoutMs: 30_000 })

const skill = (body: string) => `---\nname: synced\ndescription: From git\n---\n\n${body}\n`

async function statusOf(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn()
    return 'ok'
  } catch (error) {
    return error instanceof ApiError ? `${error.status} ${error.code}` : `other ${(error as Error).message}`
  }
}

test('sync creates and versions objects with provenance, never overwriting history', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'store')
    const { deps } = t.app
    const writer = { orgId: org.orgId, memberId: null }
    const connector = 'cin_01jstoreconnectorinstance'
    const created = await deps.db.transaction().execute((trx) =>
      insertConfigObject(
        deps,
        trx,
        writer,
        { type: 'skill', title: 'Synced', input: { rawSourceText: skill('v1') } },
        {
          sourceMode: 'connector',
          connectorInstanceId: connector,
          connectorSyncEventId: 'cse_1',
          sourceRevisionRef: 'abc123',
        },
      ),
    )
    const v2 = await deps.db.transaction().execute((trx) =>
      appendVersionIn(
        deps,
        trx,
        writer,
        created.id,
        { rawSourceText: skill('v2') },
        {
          baseVersionId: created.versionId,
          createdVia: 'connector',
          connectorSyncEventId: 'cse_2',
          sourceRevisionRef: 'def456',
        },
      ),
    )
    const row = await findConfigObject(deps.db, org.orgId, created.id)
    assert.equal(
      [row?.source_mode, row?.connector_instance_id, row?.version_count, row?.latest_version_id],
      ['connector', connector, 2, v2],
    )
    assert.equal(
      (await findConfigObjectsByConnector(deps.db, org.orgId, connector)).map((r) => r.id),
      [created.id],
    )
    assert.is(
      await findConfigObject(deps.db, 'org_01jnotthisorganization000', created.id),
      undefined,
      'scoped by organization',
    )
    // Through the API the owner sees both versions with their provenance.
    const history = await t.client.get(`/v1/config-objects/${created.id}/versions`, { token: org.owner.token })
    assert.equal(
      history.body.items.map(
        (v: {
          number: number
          createdVia: string
          connectorSyncEventId: string
          sourceRevisionRef: string
          createdByMemberId: null
        }) => [v.number, v.createdVia, v.connectorSyncEventId, v.sourceRevisionRef, v.createdByMemberId],
      ),
      [
        [2, 'connector', 'cse_2', 'def456', null],
        [1, 'connector', 'cse_1', 'abc123', null],
      ],
    )
    assert.is(history.body.items[1].rawSourceText, skill('v1'))
    // A stale base and an invalid source are refused the same way as through the API.
    assert.is(
      await statusOf(() =>
        deps.db
          .transaction()
          .execute((trx) =>
            appendVersionIn(
              deps,
              trx,
              writer,
              created.id,
              { rawSourceText: skill('v3') },
              { baseVersionId: created.versionId, createdVia: 'connector' },
            ),
          ),
      ),
      '409 version_conflict',
    )
    assert.is(
      await statusOf(() =>
        deps.db
          .transaction()
          .execute((trx) =>
            appendVersionIn(
              deps,
              trx,
              writer,
              created.id,
              { rawSourceText: 'no frontmatter' },
              { createdVia: 'connector' },
            ),
          ),
      ),
      '422 validation_failed',
    )
    assert.is(
      await statusOf(() =>
        deps.db
          .transaction()
          .execute((trx) =>
            appendVersionIn(
              deps,
              trx,
              { orgId: 'org_01jnotthisorganization000', memberId: null },
              created.id,
              { rawSourceText: skill('x') },
              { createdVia: 'connector' },
            ),
          ),
      ),
      '404 config_object_not_found',
    )
    // A source deleted upstream: sync deletes the object; history stays.
    await deps.db.transaction().execute((trx) => changeLifecycleIn(deps, trx, org.orgId, created.id, 'delete'))
    assert.is(
      await statusOf(() =>
        deps.db.transaction().execute((trx) => changeLifecycleIn(deps, trx, org.orgId, created.id, 'delete')),
      ),
      '409 invalid_lifecycle_transition',
    )
    assert.is(
      (await t.client.get(`/v1/config-objects/${created.id}/versions`, { token: org.owner.token })).body.items.length,
      2,
    )
  } finally {
    await t.close()
  }
})

test('concurrent appends on the same base in separate transactions: exactly one wins', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'race')
    const { deps } = t.app
    const writer = { orgId: org.orgId, memberId: null }
    const created = await deps.db
      .transaction()
      .execute((trx) =>
        insertConfigObject(
          deps,
          trx,
          writer,
          { type: 'context', title: 'Race', input: { rawSourceText: 'base' } },
          { sourceMode: 'import' },
        ),
      )
    const attempts = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        statusOf(() =>
          deps.db
            .transaction()
            .execute((trx) =>
              appendVersionIn(
                deps,
                trx,
                writer,
                created.id,
                { rawSourceText: `edit ${i}` },
                { baseVersionId: created.versionId, createdVia: 'import' },
              ),
            ),
        ),
      ),
    )
    assert.is(attempts.filter((s) => s === 'ok').length, 1)
    assert.is(attempts.filter((s) => s === '409 version_conflict').length, 5)
    assert.is((await findConfigObject(deps.db, org.orgId, created.id))?.version_count, 2)
  } finally {
    await t.close()
  }
})

test.run()
