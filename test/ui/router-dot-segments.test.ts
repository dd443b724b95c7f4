import { describe, expect, it } from 'vitest';
import { parseRoute } from '../../src/server/ui/web/router.js';

/**
 * The dashboard calls the API at paths made of the queue name and job id its address names
 * (`../v1/queues/{name}/…`). A URL resolves the segments `.` and `..` away, so an address naming
 * them would have the page read (and its buttons send to) other routes than the queue's: the
 * page of `#/queues/..` read `/v1/stats` as its figures and offered Pause and Delete for
 * `/v1/`. No queue has such a name, and no job with such an id can be read by its URL.
 */
describe('dashboard addresses with dot segments', () => {
  it.each([
    '#/queues/..',
    '#/queues/.',
    '#/queues/%2E%2E',
    '#/queues/%2e',
    '#/queues/../dead-letters',
    '#/queues/./dead-letters?reason=x',
    '#/queues/../jobs/a',
    '#/queues/orders/jobs/..',
    '#/queues/orders/jobs/.',
    '#/queues/orders/jobs/%2E%2E',
  ])('%s names no page', (hash) => {
    expect(parseRoute(hash)).toEqual({ page: 'notFound' });
  });

  it('names with dots that are not a whole segment still name their pages', () => {
    expect(parseRoute('#/queues/orders.v2')).toEqual({ page: 'queue', queue: 'orders.v2' });
    expect(parseRoute('#/queues/orders/jobs/...')).toEqual({
      page: 'job',
      queue: 'orders',
      id: '...',
    });
    expect(parseRoute('#/queues/orders/jobs/a%2F..')).toEqual({
      page: 'job',
      queue: 'orders',
      id: 'a/..',
    });
  });
});
