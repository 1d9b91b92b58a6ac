/**
 * The fetch every SDK client uses: each write (POST, PUT, PATCH, DELETE) carries a fresh
 * `Idempotency-Key` unless the caller set one, and an answer of 503 (`server_busy`, a server
 * stopping) is retried after its `Retry-After` with the same request, key included, so a retried
 * write is applied at most once where the server honours the key.
 * @module
 */

/** How {@link resilientFetch} retries. */
export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  retries?: number
  /** Upper bound of one wait, whatever `Retry-After` says (default 10 s). */
  maxDelayMs?: number
  /** The underlying fetch (default `globalThis.fetch`). */
  fetch?: typeof fetch
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** The header that makes a write safe to retry. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key'

/** Milliseconds to wait for a `Retry-After` value (seconds or an HTTP date); 1 s when absent. */
export function retryDelayMs(value: string | null, maxDelayMs: number): number {
  if (value === null) return Math.min(1000, maxDelayMs)
  const seconds = Number(value)
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now()
  return Math.max(0, Math.min(Number.isFinite(ms) ? ms : 1000, maxDelayMs))
}

/** A fetch that adds idempotency keys to writes and retries 503 answers. */
export function resilientFetch(options: RetryOptions = {}): typeof fetch {
  const base = options.fetch ?? globalThis.fetch
  const retries = options.retries ?? 2
  const maxDelayMs = options.maxDelayMs ?? 10_000
  const wrapped = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    if (WRITES.has(request.method) && !request.headers.has(IDEMPOTENCY_HEADER))
      request.headers.set(IDEMPOTENCY_HEADER, crypto.randomUUID())
    for (let attempt = 0; ; attempt++) {
      // A clone per attempt keeps the original body readable for the next one.
      const response = await base(attempt < retries ? request.clone() : request)
      if (response.status !== 503 || attempt >= retries || request.signal.aborted) return response
      const delay = retryDelayMs(response.headers.get('retry-after'), maxDelayMs)
      await response.body?.cancel()
      await new Promise((done) => setTimeout(done, delay))
    }
  }
  return wrapped as typeof fetch
}
