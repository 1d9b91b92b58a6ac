/**
 * Control-plane migrations, imported statically so a compiled binary carries them
 * (a file-based provider cannot read `/$bunfs` inside `bun build --compile` output).
 * Add a migration: create `NNNN_name.ts` exporting `up`/`down`, then list it here.
 */
import type { MigrationSet } from '../../src/storage/database.ts'
import * as m0001 from './0001_instance.ts'
import * as m0002 from './0002_identity.ts'
import * as m0003 from './0003_organizations.ts'
import * as m0004 from './0004_teams.ts'
import * as m0005 from './0005_audit.ts'
import * as m0006 from './0006_config_objects.ts'
import * as m0007 from './0007_access_grants.ts'
import * as m0008 from './0008_plugins_marketplaces.ts'
import * as m0009 from './0009_skill_hubs.ts'
import * as m0010 from './0010_llm_providers.ts'
import * as m0011 from './0011_config_object_latest_summary.ts'
import * as m0020 from './0020_jobs.ts'
import * as m0021 from './0021_workers.ts'
import * as m0022 from './0022_connectors.ts'
import * as m0023 from './0023_sync_deleted_count.ts'
import * as m0024 from './0024_sign_in_throttle.ts'
import * as m0025 from './0025_change_feed.ts'
import * as m0030 from './0030_worker_runtime_owner.ts'
import * as m0040 from './0040_skill_files.ts'
import * as m0050 from './0050_idempotency_keys.ts'
import * as m0055 from './0055_change_audience.ts'
import * as m0056 from './0056_contents_by_object.ts'
import * as m0060 from './0060_oauth_tokens.ts'
import * as m0061 from './0061_oauth_clients.ts'
import * as m0065 from './0065_delivery.ts'
import * as m0066 from './0066_delivery_capabilities.ts'
import * as m0070 from './0070_audit_origin.ts'
import * as m0075 from './0075_sso.ts'
import * as m0080 from './0080_scim.ts'
import * as m0085 from './0085_audit_requests.ts'

export const controlPlaneMigrations: MigrationSet = {
  '0001_instance': m0001,
  '0002_identity': m0002,
  '0003_organizations': m0003,
  '0004_teams': m0004,
  '0005_audit': m0005,
  '0006_config_objects': m0006,
  '0007_access_grants': m0007,
  '0008_plugins_marketplaces': m0008,
  '0009_skill_hubs': m0009,
  '0010_llm_providers': m0010,
  '0011_config_object_latest_summary': m0011,
  '0020_jobs': m0020,
  '0021_workers': m0021,
  '0022_connectors': m0022,
  '0023_sync_deleted_count': m0023,
  '0024_sign_in_throttle': m0024,
  '0025_change_feed': m0025,
  '0030_worker_runtime_owner': m0030,
  '0040_skill_files': m0040,
  '0050_idempotency_keys': m0050,
  '0055_change_audience': m0055,
  '0056_contents_by_object': m0056,
  '0060_oauth_tokens': m0060,
  '0061_oauth_clients': m0061,
  '0065_delivery': m0065,
  '0066_delivery_capabilities': m0066,
  '0070_audit_origin': m0070,
  '0075_sso': m0075,
  '0080_scim': m0080,
  '0085_audit_requests': m0085,
}
