/**
 * The leaseq HTTP server: `createApp` (routes, no listening) and `startServer` (storage + listen).
 */

export type { ServerErrorCode, WireError } from '../wire/index.js';
export { type AppOptions, createApp } from './app.js';
export type { Action, ApiKeyConfig, KeyGrant } from './auth.js';
export {
  type ConfigSources,
  DEFAULT_CONFIG,
  envName,
  flagName,
  isLoopback,
  type LogLevel,
  loadConfig,
  SETTINGS,
  type ServerConfig,
  type Setting,
  type SettingKind,
} from './config.js';
export { type ErrorBody, type ErrorCode, ServerError, STATUS_BY_CODE } from './errors.js';
export { DEFAULT_LIMITS, type Limits } from './limits.js';
export { type RunningServer, type StartOptions, startServer } from './server.js';
export type { SqsSettings } from './sqs/context.js';
export { VERSION } from './version.js';
