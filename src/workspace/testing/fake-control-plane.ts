/**
 * A small control plane over real HTTP for the organization-link tests that need one the real
 * control plane cannot play: a hostile or broken one (paths that leave the delivery area,
 * oversized files, wrong digests), one that goes down and comes back on the same port, and one
 * whose feed the test drives event by event. It speaks the contract's wire shapes: the device
 * grant, `GET /v1/me/delivery`, `GET /v1/events` (SSE with `Last-Event-ID`).
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { type Listener, serve } from '../../serve.ts'

/** Short retry and poll timing so faults resolve within a test. */
export const FAST_LINK = {
  backoffInitialMs: 50,
  backoffMaxMs: 400,
  devicePollMs: 50,
  client: { requestTimeoutMs: 3000, idleTimeoutMs: 10_000, maxDeliveryBytes: 64 * 1024 * 1024, maxSmallBytes: 65_536 },
}

/** A delivered file as the test writes it. */
export interface FakeFile {
  path: string
  content: string
  executable?: boolean
  encoding?: 'utf8' | 'base64'
  size?: number
  sha256?: string
}

/** A delivered item as the test writes it (defaults filled in). */
export interface FakeItem {
  objectId: string
  type: string
  name: string
  versionId?: string
  files?: FakeFile[]
  config?: Record<string, unknown>
}

const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex')

/** A running fake control plane. */
export interface FakeControlPlane {
  readonly url: string
  /** Approves a pending user code (as the member would in the console). */
  approve(userCode: string): void
  /** Replaces the delivered items and announces `delivery.changed` on the feed. */
  deliver(items: FakeItem[]): void
  /** Serves this exact body for `/v1/me/delivery` (hostile answers). */
  rawDelivery(body: unknown): void
  /** Appends an event to the feed. */
  emit(kind: string, data?: Record<string, unknown>): void
  /** Delay before each delivery answer (a slow control plane). */
  deliveryDelayMs: number
  /** Accepts a token issued elsewhere (a Worker's activity token). */
  acceptToken(token: string): void
  /** Heartbeats received (`POST /v1/workers/:id/heartbeat`), with the delivery reads seen before each. */
  readonly heartbeats: Array<{ workerId: string; deliveryReadsBefore: number }>
  /** Refuses every issued token from now on (401) and ends open streams. */
  revokeAll(): void
  /** Stops listening (connections refused); `up()` listens again on the same port. */
  down(): Promise<void>
  up(): Promise<void>
  /** `Last-Event-ID` headers seen on feed connections, in order. */
  readonly resumedFrom: Array<string | null>
  readonly deliveryReads: number
  close(): Promise<void>
}

/** Starts a fake control plane on an ephemeral loopback port. */
export async function startFakeControlPlane(): Promise<FakeControlPlane> {
  const pending = new Map<string, { deviceCode: string; approved: boolean }>()
  const tokens = new Set<string>()
  const refresh = new Set<string>()
  let items: FakeItem[] = []
  let raw: unknown
  const events: Array<{ seq: number; kind: string; data: Record<string, unknown> }> = []
  const streams = new Set<{ push(): void; end(): void; token: string }>()
  const resumedFrom: Array<string | null> = []
  let deliveryReads = 0
  const heartbeats: FakeControlPlane['heartbeats'] = []

  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
  const bearer = (request: Request) => /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? ''

  const wire = () =>
    items.map((item) => {
      const files = (item.files ?? []).map((f) => {
        const bytes = f.encoding === 'base64' ? Buffer.from(f.content, 'base64') : Buffer.from(f.content)
        return {
          path: f.path,
          encoding: f.encoding ?? 'utf8',
          content: f.content,
          executable: f.executable ?? false,
          size: f.size ?? bytes.length,
          sha256: f.sha256 ?? sha(bytes),
        }
      })
      const digest = sha(JSON.stringify([files, item.config ?? null]))
      return {
        objectId: item.objectId,
        type: item.type,
        name: item.name,
        versionId: item.versionId ?? `ver_${digest.slice(0, 12)}`,
        digest,
        reasons: [{ via: 'grant', id: 'grt_1', name: 'test', scope: 'member' }],
        files,
        ...(item.config ? { config: item.config } : {}),
      }
    })

  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    if (request.method === 'POST' && url.pathname === '/oauth/device_authorization') {
      const userCode = randomBytes(4).toString('hex').toUpperCase()
      const deviceCode = randomBytes(16).toString('hex')
      pending.set(userCode, { deviceCode, approved: false })
      return json(200, {
        device_code: deviceCode,
        user_code: userCode,
        verification_uri: `${base}/device`,
        verification_uri_complete: `${base}/device?user_code=${userCode}`,
        expires_in: 600,
        interval: 1,
      })
    }
    if (request.method === 'POST' && url.pathname === '/oauth/token') {
      const form = new URLSearchParams(await request.text())
      if (form.get('grant_type') === 'refresh_token') {
        const old = form.get('refresh_token') ?? ''
        if (!refresh.delete(old)) return json(400, { error: 'invalid_grant' })
        return issue()
      }
      const entry = [...pending.values()].find((p) => p.deviceCode === form.get('device_code'))
      if (!entry) return json(400, { error: 'expired_token' })
      if (!entry.approved) return json(400, { error: 'authorization_pending' })
      for (const [code, p] of pending) if (p === entry) pending.delete(code)
      return issue()
    }
    const token = bearer(request)
    const beat = /^\/v1\/workers\/([^/]+)\/heartbeat$/.exec(url.pathname)
    if (request.method === 'POST' && beat) {
      if (!tokens.has(token)) return json(401, { code: 'unauthorized' })
      heartbeats.push({ workerId: beat[1]!, deliveryReadsBefore: deliveryReads })
      return json(200, { ok: true })
    }
    if (url.pathname === '/v1/me/delivery') {
      if (!tokens.has(token)) return json(401, { code: 'unauthorized' })
      deliveryReads++
      if (plane.deliveryDelayMs) await new Promise((resolve) => setTimeout(resolve, plane.deliveryDelayMs))
      if (raw !== undefined) return json(200, raw)
      const list = wire()
      return json(200, {
        principal: { kind: 'member', userId: 'usr_1', memberId: 'mem_1' },
        organization: { id: 'org_1', name: 'Acme' },
        digest: sha(JSON.stringify(list.map((i) => [i.objectId, i.versionId, i.digest]))),
        items: list,
      })
    }
    if (url.pathname === '/v1/events') {
      if (!tokens.has(token)) return json(401, { code: 'unauthorized' })
      const resume = request.headers.get('last-event-id')
      resumedFrom.push(resume)
      let last = resume && /^\d+$/.test(resume) ? Number(resume) : events.length
      const encoder = new TextEncoder()
      let stream!: { push(): void; end(): void; token: string }
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          stream = {
            token,
            push() {
              while (last < events.length) {
                const e = events[last++]!
                controller.enqueue(encoder.encode(`id: ${e.seq}\nevent: ${e.kind}\ndata: ${JSON.stringify(e)}\n\n`))
              }
            },
            end() {
              streams.delete(stream)
              try {
                controller.close()
              } catch {
                // already closed
              }
            },
          }
          streams.add(stream)
          controller.enqueue(encoder.encode(': open\n\n'))
          stream.push()
        },
        cancel() {
          streams.delete(stream)
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } })
    }
    return json(404, { code: 'not_found' })
  }

  function issue(): Response {
    const access = `oat_${randomBytes(12).toString('hex')}`
    const refreshToken = `ort_${randomBytes(12).toString('hex')}`
    tokens.add(access)
    refresh.add(refreshToken)
    return json(200, {
      access_token: access,
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: refreshToken,
      scope: 'delivery:read',
      organization: { id: 'org_1', name: 'Acme' },
    })
  }

  let listener: Listener = await serve({ host: '127.0.0.1', port: 0, fetch: handler })
  const port = listener.port
  const base = `http://127.0.0.1:${port}`
  let running = true
  const emit = (kind: string, data: Record<string, unknown> = {}) => {
    events.push({ seq: events.length + 1, kind, data })
    for (const s of streams) s.push()
  }
  const plane: FakeControlPlane = {
    url: base,
    deliveryDelayMs: 0,
    approve(userCode) {
      const entry = pending.get(userCode)
      if (!entry) throw new Error(`no pending code ${userCode}`)
      entry.approved = true
    },
    deliver(next) {
      items = next
      raw = undefined
      emit('delivery.changed', { scope: 'member' })
    },
    rawDelivery(body) {
      raw = body
      emit('delivery.changed', { scope: 'member' })
    },
    emit,
    acceptToken(token) {
      tokens.add(token)
    },
    heartbeats,
    revokeAll() {
      tokens.clear()
      refresh.clear()
      for (const s of [...streams]) s.end()
    },
    async down() {
      if (!running) return
      running = false
      for (const s of [...streams]) s.end()
      await listener.stop()
    },
    async up() {
      if (running) return
      listener = await serve({ host: '127.0.0.1', port, fetch: handler })
      running = true
    },
    resumedFrom,
    get deliveryReads() {
      return deliveryReads
    },
    async close() {
      for (const s of [...streams]) s.end()
      if (running) await listener.stop()
      running = false
    },
  }
  return plane
}
