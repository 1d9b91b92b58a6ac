/**
 * The secret box lives in `src/storage/secret-box.ts` since the workspace seals its organization
 * token with it too; control-plane modules keep importing it from here.
 * @module
 */
export * from '../storage/secret-box.ts'
