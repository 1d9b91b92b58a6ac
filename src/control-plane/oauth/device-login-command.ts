/**
 * The device sign-in as a program that runs where only a POSIX shell and curl are installed: the
 * command `/.well-known/opencode` hands to `opencode auth login` (issue 30 §1). It asks for a
 * device code, prints the verification URL and the code on stderr, polls the token endpoint at
 * the interval the server sets (slower on `slow_down`), and prints only the access token on
 * stdout, which is what OpenCode stores. Nothing is downloaded at run time: the whole program is
 * in the argv.
 *
 * JSON is read with sed, which is safe here because it reads only our own answers: compact JSON
 * whose string values (base64url codes, the user code, URLs, error codes) hold no quotes or
 * backslashes; each field is matched by its quoted name with optional spaces around the colon.
 * @module
 */

const SCRIPT = String.raw`set -u
base=$1
client=$2
field() {
  printf '%s' "$1" | tr -d '\r\n' | sed -n "s/.*\"$2\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"
}
number() {
  printf '%s' "$1" | tr -d '\r\n' | sed -n "s/.*\"$2\"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p"
}
post() {
  curl -sS --max-time 30 -H 'Accept: application/json' "$@"
}
start=$(post --data-urlencode "client_id=$client" --data-urlencode 'scope=delivery:read' "$base/oauth/device_authorization") || {
  echo "Could not reach $base" >&2
  exit 1
}
device_code=$(field "$start" device_code)
user_code=$(field "$start" user_code)
uri=$(field "$start" verification_uri)
complete=$(field "$start" verification_uri_complete)
interval=$(number "$start" interval)
expires=$(number "$start" expires_in)
if [ -z "$device_code" ] || [ -z "$user_code" ]; then
  reason=$(field "$start" error_description)
  [ -n "$reason" ] || reason="unexpected answer from $base"
  echo "Sign-in could not start: $reason" >&2
  exit 1
fi
[ -n "$interval" ] || interval=5
[ -n "$expires" ] || expires=600
[ -n "$complete" ] || complete=$uri
{
  echo "To sign in, open this page in a browser where you are signed in to your organization:"
  echo "  $complete"
  echo "and confirm the code $user_code (also accepted at $uri)."
  echo "Waiting for approval..."
} >&2
waited=0
while [ "$waited" -lt "$expires" ]; do
  sleep "$interval"
  waited=$((waited + interval))
  answer=$(post --data-urlencode 'grant_type=urn:ietf:params:oauth:grant-type:device_code' --data-urlencode "device_code=$device_code" --data-urlencode "client_id=$client" "$base/oauth/token") || {
    echo "The server did not answer; retrying" >&2
    continue
  }
  token=$(field "$answer" access_token)
  if [ -n "$token" ]; then
    org=$(field "$answer" name)
    if [ -n "$org" ]; then echo "Signed in to $org." >&2; else echo "Signed in." >&2; fi
    printf '%s\n' "$token"
    exit 0
  fi
  case $(field "$answer" error) in
    authorization_pending) ;;
    slow_down) interval=$((interval + 5)) ;;
    access_denied) echo "The sign-in was denied." >&2; exit 1 ;;
    expired_token) echo "The code expired before it was approved; run the sign-in again." >&2; exit 1 ;;
    *) echo "Sign-in failed: $(field "$answer" error) $(field "$answer" error_description)" >&2; exit 1 ;;
  esac
done
echo "The code expired before it was approved; run the sign-in again." >&2
exit 1
`

const SAFE_URL = /^https?:\/\/[^\s'"`\\$]+$/
const SAFE_CLIENT = /^[A-Za-z0-9._-]{1,64}$/

/**
 * The device sign-in against `controlPlaneUrl` for `clientId`, as an argv:
 * `["sh", "-c", <script>, "sh", <url>, <clientId>]`. Both values travel as positional
 * parameters, never inside the script text, and are checked anyway.
 */
export function deviceLoginCommand(controlPlaneUrl: string, clientId: string): string[] {
  if (!SAFE_URL.test(controlPlaneUrl)) throw new Error('deviceLoginCommand: the URL must be a plain http(s) URL')
  if (!SAFE_CLIENT.test(clientId)) throw new Error('deviceLoginCommand: invalid client id')
  return ['sh', '-c', SCRIPT, 'sh', controlPlaneUrl.replace(/\/+$/, ''), clientId]
}
