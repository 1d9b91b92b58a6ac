import { assert, suite } from '../../tests/harness.ts'
import { defineErrors, errorFactory, listErrorCodes } from './error-catalogue.ts'
import { ApiError } from './errors.ts'

const catalogue = suite('core/error-catalogue')

const CODES = defineErrors({
  widget_not_found: { status: 404, description: 'No widget with this id' },
  widget_busy: { status: 409, otherStatuses: [423], description: 'The widget is in use' },
})
const fail = errorFactory(CODES)

catalogue('an error made by code carries the catalogued status, the message and the options', () => {
  const error = fail('widget_not_found', 'Widget w1 not found', { details: { id: 'w1' }, headers: { 'x-a': 'b' } })
  assert.instance(error, ApiError)
  assert.is(error.status, 404)
  assert.is(error.code, 'widget_not_found')
  assert.equal(error.toBody(), { code: 'widget_not_found', message: 'Widget w1 not found', details: { id: 'w1' } })
  assert.equal(error.headers, { 'x-a': 'b' })
})

catalogue('without a message the description is the message', () => {
  assert.is(fail('widget_not_found').message, 'No widget with this id')
})

catalogue('a second status is accepted only when the catalogue lists it', () => {
  assert.is(fail('widget_busy', undefined, { status: 423 }).status, 423)
  assert.throws(() => fail('widget_busy', undefined, { status: 500 }), /catalogued with status 409, not 500/)
  assert.throws(() => fail('widget_not_found', undefined, { status: 400 }), /not 400/)
})

catalogue('a code outside the catalogue is a defect, not an error response', () => {
  assert.throws(() => (fail as (code: string) => ApiError)('widget_lost'), /not in the catalogue/)
})

catalogue('the documented list is sorted by status, then code, and keeps second statuses', () => {
  assert.equal(listErrorCodes(CODES), [
    { code: 'widget_not_found', status: 404, description: 'No widget with this id' },
    { code: 'widget_busy', status: 409, otherStatuses: [423], description: 'The widget is in use' },
  ])
})

catalogue.run()
