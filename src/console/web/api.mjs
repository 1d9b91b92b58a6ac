// The console's only way to the server: same-origin calls to the documented API with the
// credentials the user gave. Errors keep the server's status, code, message and details.

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
    const init = { method, headers: { accept: 'application/json', ...headers(), ...extra }, cache: 'no-store' }
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json'
      init.body = JSON.stringify(body)
    }
    let response
    try {
      response = await fetch(path, init)
    } catch {
      throw new ApiFailure(0, 'network_error', 'The server did not answer; check that it is still running')
    }
    const text = await response.text()
    let data
    try {
      data = text ? JSON.parse(text) : undefined
    } catch {
      data = undefined
    }
    if (!response.ok) {
      const failure = new ApiFailure(
        response.status,
        data?.code ?? `http_${response.status}`,
        data?.message ?? `The server answered ${response.status}`,
        data?.details,
      )
      if (response.status === 401 && onUnauthorized) onUnauthorized(failure)
      throw failure
    }
    return data
  }
  return {
    get: (path, extra) => call('GET', path, undefined, extra),
    post: (path, body, extra) => call('POST', path, body ?? {}, extra),
    put: (path, body) => call('PUT', path, body),
    patch: (path, body) => call('PATCH', path, body),
    del: (path) => call('DELETE', path),
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
