export type {
  Engine,
  EngineCapabilities,
  QueueHandle,
  QueueInfo,
  StorageCloseOptions,
  WakeListener,
} from './engine.js';
export { MemoryEngine } from './memory/memory-engine.js';
export {
  DEFAULT_URL,
  type EngineOptions,
  openEngine,
  redactUrl,
  storageUrlProblem,
} from './open-engine.js';
export type { ScheduleRecord, ScheduleStore } from './schedules.js';
