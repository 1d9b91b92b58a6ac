/**
 * The console's address for a start-up banner, and the one-time link built on it. A wildcard listen
 * address is not one a browser can open, so it is shown as loopback; IPv6 literals are bracketed.
 * @module
 */

/** `http://<host>:<port>/console/` for the address the server listens on. */
export function consoleUrl(address: { host: string; port: number }): string {
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '::' ? '::1' : address.host
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  return `http://${shown}:${address.port}/console/`
}

/** The console link for the banner, carrying the one-time code in the fragment (never sent to a server log). */
export function consoleLink(address: { host: string; port: number }, code: string): string {
  return `${consoleUrl(address)}#code=${code}`
}
