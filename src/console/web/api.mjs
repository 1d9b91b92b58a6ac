// The console's only way to the server: same-origin calls to the documented API with the
// credentials the user gave. Errors keep the server's status, code, message and details.

/** Tries of one call answered 503 before its failure is shown. */
const MAX_ATTEMPTS = 3

/**
 * A fresh Idempotency-Key: 128 random bits as hex. `getRandomValues` rather than `randomUUID`,
 * which browsers offer only on secure origins (a console on plain http in a LAN has none).
 */
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Waits what `Retry-After` asks (seconds), between one half and five seconds. */
function pause(retryAfter) {
  const seconds = Math.min(5, Math.max(0.5, Number(retryAfter) || 1))
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000))
}

/** An API failure as the server described it. */
export class ApiFailure extends Error {
  constructor(status, code, message, details) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

/**
 * A client over relative URLs. `headers()` returns the credential headers for each call;
 * `onUnauthorized(failure)` runs on a 401 (the session ended or the token was revoked).
 */
export function createApi({ headers, onUnauthorized }) {
  async function call(method, path, body, extra) {
    // X-Service-Client tells the audit log that a person acted through the console (origin `console`).
    const init = {
      method,
      headers: { accept: 'application/json', 'x-service-client': 'console', ...headers(), ...extra },
      cache: 'no-store',
    }
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json'
      init.body = JSON.stringify(body)
    }
    // Every write carries a key of its own, so the retries below (and the server) never make it twice.
    if (method !== 'GET') init.headers['idempotency-key'] = idempotencyKey()
    let response
    for (let attempt = 1; ; attempt++) {
      try {
        response = await fetch(path, init)
      } catch {
        throw new ApiFailure(0, 'network_error', 'The server did not answer; check that it is still running')
      }
      // 503: nothing was run (busy, database unavailable) or its outcome is unknown; with the same
      // key a repeat is safe and tells which. A few tries, as long as the server asks to wait.
      if (response.status !== 503 || attempt >= MAX_ATTEMPTS) break
      await response.body?.cancel()
      await pause(response.headers.get('retry-after'))
    }
    const text = await response.text()
    let data
    try {
      data = text ? JSON.parse(text) : undefined
    } catch {
      data = undefined
    }
    if (!response.ok) throw failed(response.status, data)
    return data
  }
  function failed(status, data) {
    const failure = new ApiFailure(
      status,
      data?.code ?? `http_${status}`,
      data?.message ?? `The server answered ${status}`,
      data?.details,
    )
    if (status === 401 && onUnauthorized) onUnauthorized(failure)
    return failure
  }
  /**
   * POSTs a file as `contentType`, reporting `onProgress(sent, total)` while it goes out: fetch
   * cannot tell how much of a request body was sent, XMLHttpRequest can.
   */
  function upload(path, file, contentType, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      xhr.open('POST', path)
      for (const [name, value] of Object.entries({
        accept: 'application/json',
        'x-service-client': 'console',
        ...headers(),
      }))
        xhr.setRequestHeader(name, value)
      xhr.setRequestHeader('content-type', contentType)
      xhr.setRequestHeader('idempotency-key', idempotencyKey())
      xhr.upload.addEventListener('progress', (event) =>
        onProgress?.(event.loaded, event.lengthComputable ? event.total : file.size),
      )
      xhr.addEventListener('load', () => {
        let data
        try {
          data = xhr.responseText ? JSON.parse(xhr.responseText) : undefined
        } catch {
          data = undefined
        }
        if (xhr.status >= 200 && xhr.status < 300) resolve(data)
        else reject(failed(xhr.status, data))
      })
      xhr.addEventListener('error', () =>
        reject(new ApiFailure(0, 'network_error', 'The server did not answer; check that it is still running')),
      )
      xhr.send(file)
    })
  }
  return {
    get: (path, extra) => call('GET', path, undefined, extra),
    post: (path, body, extra) => call('POST', path, body ?? {}, extra),
    put: (path, body) => call('PUT', path, body),
    patch: (path, body) => call('PATCH', path, body),
    del: (path) => call('DELETE', path),
    upload,
    headers,
  }
}

/** `/a/b?x=1` from a path (which may carry a query already) and a query object (empty values left out). */
export function withQuery(path, query) {
  const mark = path.indexOf('?')
  const params = new URLSearchParams(mark >= 0 ? path.slice(mark + 1) : '')
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value))
  const base = mark >= 0 ? path.slice(0, mark) : path
  const text = params.toString()
  return text ? `${base}?${text}` : base
}
