import { describe, expect, it } from 'vitest';
import { DEFAULT_QUEUE_OPTIONS, LeaseQueue } from '../../src/core/index.js';

describe('DEFAULT_QUEUE_OPTIONS', () => {
  it('cannot be changed: an assignment throws, and later queues keep the defaults', () => {
    expect(() => {
      (DEFAULT_QUEUE_OPTIONS as { maxDeliveries: number }).maxDeliveries = 1;
    }).toThrow(TypeError);
    expect(new LeaseQueue().options.maxDeliveries).toBe(10);
  });
});
