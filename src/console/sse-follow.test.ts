/**
 * The console's SSE reader (web/sse.mjs, the one its pages use) against the real control-plane
 * change feed over HTTP: it sends the bearer EventSource could not, resumes with Last-Event-ID
 * after the server drops the stream, and stops once the credential is refused.
 */
import { assert, suite } from '../../tests/harness.ts'
import { buildFixtureOrg } from '../control-plane/testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../control-plane/testing/test-control-plane.ts'
import { serve } from '../serve.ts'

interface FeedEvent {
  id: string | null
  event: string
  data: { seq: number; kind: string; subject: { type: string; id: string } | null }
}
type Follow = (
  path: string,
  headers: () => Record<string, string>,
  handlers: { onEvent(event: FeedEvent): void; onState(state: string, detail?: string): void },
) => { close(): void }

const test = suite('console: SSE reader over the change feed', { timeoutMs: 60_000 })

async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function makeSkill(t: TestControlPlane, token: string, name: string): Promise<string> {
  const res = await t.client.post('/v1/config-objects', {
    token,
    json: {
      type: 'skill',
      sourceMode: 'cloud',
      title: name,
      input: { rawSourceText: `---\nname: ${name}\ndescription: The ${name} skill\n---\nDo ${name}.\n` },
    },
  })
  assert.is(res.status, 201, JSON.stringify(res.body))
  return res.body.item.id
}

test('the reader follows the feed with the bearer, resumes after a drop with Last-Event-ID, and stops when the session ends', async () => {
  // The browser module itself, loaded by URL (its static import is typed as text for embedding).
  const { follow } = (await import(String(new URL('./web/sse.mjs', import.meta.url)))) as { follow: Follow }
  const t = await startTestControlPlane()
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: t.app.fetch })
  const events: FeedEvent[] = []
  const states: string[] = []
  let reader: { close(): void } | null = null
  try {
    const org = await buildFixtureOrg(t.client, 'sse')
    reader = follow(
      `http://127.0.0.1:${listener.port}/v1/events`,
      () => ({ authorization: `Bearer ${org.admin.token}` }),
      {
        onEvent: (event) => events.push(event),
        onState: (state, detail) => states.push(detail ? `${state}: ${detail}` : state),
      },
    )
    await until('the stream is open', () => states.includes('open'))
    const first = await makeSkill(t, org.owner.token, 'one')
    await until('the first change arrives', () => events.length === 1)
    // The server ends every stream (as at shutdown); the change below is made while the reader
    // waits to reconnect, and a fresh stream without Last-Event-ID would start after it.
    t.app.streams.closeAll()
    const second = await makeSkill(t, org.owner.token, 'two')
    await until('the change made during the gap arrives', () => events.length === 2)
    assert.equal(
      events.map((e) => [e.event, e.data.subject?.id]),
      [
        ['config_object.created', first],
        ['config_object.created', second],
      ],
    )
    assert.is(events[1]!.id, String(events[1]!.data.seq), 'the SSE id is the feed seq')
    assert.ok(Number(events[1]!.id) > Number(events[0]!.id))
    assert.ok(
      states.some((s) => s.startsWith('retrying')),
      `states: ${states}`,
    )
    assert.is(states.filter((s) => s === 'open').length, 2, `states: ${states}`)

    const out = await t.client.post('/v1/auth/sign-out', { token: org.admin.token })
    assert.ok(out.status < 300, `sign-out answered ${out.status}`)
    // The stream re-checks its credential when a change wakes it, ends, and the reconnect is refused.
    await makeSkill(t, org.owner.token, 'three')
    await until('the reader stops', () => states.some((s) => s.startsWith('closed')))
    assert.is(events.length, 2, 'nothing reaches a signed-out reader')
  } finally {
    reader?.close()
    await listener.stop()
    await t.close()
  }
})

test.run()
