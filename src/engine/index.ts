export type {
  CancelListener,
  Engine,
  EngineCapabilities,
  EngineTransaction,
  QueueHandle,
  QueueInfo,
  ScheduleMove,
  ServedWake,
  SqlParameter,
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
export type { StoredSecret } from './secrets.js';
export type { StepTime } from './stats-by-step.js';
