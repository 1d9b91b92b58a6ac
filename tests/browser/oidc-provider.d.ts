/** `oidc-provider` ships no types; the SSO browser suite uses its constructor and `callback()` only. */
declare module 'oidc-provider' {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: unknown, res: unknown) => void
  }
}
