/** Package entry: start the server programmatically (see docs/server.md). */
export { startServer, type StartOptions, type RunningServer } from './server.js';
export { loadConfig, ConfigError, SETTINGS, type Config } from './config.js';
export { ApiError, Grpc } from './errors.js';
export type { BootstrapInfo } from './bootstrap.js';
