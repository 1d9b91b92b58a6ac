/**
 * Wire schemas of skill bundle files, shared by both surfaces' routes and OpenAPI documents so a
 * file looks the same on the workspace server and the control plane.
 * @module
 */
import * as v from 'valibot'

const Path = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(512),
  v.description('Relative to the skill folder, `/`-separated, e.g. scripts/run.sh (not SKILL.md)'),
)

/**
 * A file sent to the server: `{content, encoding}` as the server returns it (so a file read can be
 * sent back unchanged), or the older `{content}` (UTF-8 text) / `{contentBase64}` forms.
 */
export const SkillFileIn = v.pipe(
  v.strictObject({
    path: Path,
    content: v.optional(
      v.pipe(
        v.string(),
        v.description('The text (encoding utf8, the default) or the bytes in base64 (encoding base64)'),
      ),
    ),
    encoding: v.optional(v.pipe(v.picklist(['utf8', 'base64']), v.description('How `content` holds the bytes'))),
    contentBase64: v.optional(
      v.pipe(v.string(), v.description('Deprecated: the bytes, base64; send `{content, encoding: "base64"}`')),
    ),
    executable: v.optional(v.pipe(v.boolean(), v.description('Restored as mode 0755 (else 0644)'))),
    sha256: v.optional(
      v.pipe(v.string(), v.regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits'), v.description('Checked when given')),
    ),
  }),
  v.check(
    (f) =>
      f.content === undefined
        ? f.contentBase64 !== undefined && f.encoding === undefined
        : f.contentBase64 === undefined || (f.encoding === 'base64' && f.contentBase64 === f.content),
    'give content (with encoding utf8 or base64) or, deprecated, contentBase64',
  ),
  v.title('SkillFileIn'),
)

/** Files sent with a skill (at most 10,000 entries on the wire; the server's limits are lower). */
export const SkillFilesIn = v.pipe(v.array(SkillFileIn), v.maxLength(10_000))

/**
 * A file the server returns, the same shape on both surfaces (and as the control plane's resolved
 * form): `content` is the text when `encoding` is `utf8`, else the bytes in base64.
 */
export const SkillFileOut = v.pipe(
  v.strictObject({
    path: v.string(),
    content: v.pipe(v.string(), v.description('The text (encoding utf8) or the bytes in base64 (encoding base64)')),
    encoding: v.picklist(['utf8', 'base64']),
    contentBase64: v.optional(
      v.pipe(
        v.string(),
        v.description('Deprecated, present only for base64 files (equal to `content`); read `content` and `encoding`'),
      ),
    ),
    executable: v.pipe(v.boolean(), v.description('Mode 0755 (else 0644)')),
    sha256: v.string(),
  }),
  v.title('SkillFileOut'),
)

/** A file's listing entry. */
export const SkillFileListing = v.pipe(
  v.strictObject({ path: v.string(), bytes: v.number(), executable: v.boolean(), sha256: v.string() }),
  v.title('SkillFileListing'),
)

const positiveInt = v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1))

/**
 * The `skills` key of either surface's config file: skill folder limits (and, on the control
 * plane, zip upload limits). Every key is optional and falls back to its default.
 */
export const SkillLimitsFileSchema = v.strictObject({
  maxFiles: v.optional(positiveInt),
  maxFileBytes: v.optional(positiveInt),
  maxBytes: v.optional(positiveInt),
  maxZipBytes: v.optional(positiveInt),
  maxEntries: v.optional(positiveInt),
  maxInflatedBytes: v.optional(positiveInt),
})
