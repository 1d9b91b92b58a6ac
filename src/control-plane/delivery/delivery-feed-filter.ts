/**
 * The feed kind of a delivery change. Who sees one is its audience, stored when it is written
 * (`delivery-events.ts` names the organization, teams, members or Workers it concerns; see
 * `events/change-audience.ts`): a reader gets the events addressed to them through the same
 * audience index as every other kind, and a Worker's runtime reads only those addressed to it.
 * @module
 */

/** The feed kind. */
export const DELIVERY_CHANGED = 'delivery.changed'
