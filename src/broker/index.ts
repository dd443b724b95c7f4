export { type Clock, ManualClock, RESYNC_MS, SystemClock, type TimeSources } from './clock.js';
export { type BrokerOptions, EngineBroker, EngineQueue } from './engine-broker.js';
export {
  type Broker,
  type BrokerTransaction,
  checkReceiveOnly,
  type Queue,
  type QueueLimits,
  RECEIVE_ONLY_OPTIONS,
  type ReceiveOptions,
} from './queue.js';
export type { ScheduleOptions, ScheduleView, ScheduleWhen } from './schedule-times.js';
export {
  type PublishedOccurrence,
  type ScheduleRef,
  Scheduler,
  type SchedulerOptions,
} from './scheduler.js';
