export { type Clock, ManualClock, SystemClock } from './clock.js';
export { type BrokerOptions, EngineBroker, EngineQueue } from './engine-broker.js';
export type { Broker, BrokerTransaction, Queue, ReceiveOptions } from './queue.js';
