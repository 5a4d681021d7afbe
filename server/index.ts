/** The package's main entry: the emulator's server, to embed or to start from code. */
// First: runtime/index.ts checks the Node.js version before anything else of the package loads.
import '../runtime/index.ts';
export { buildServer, type BuildServerOptions } from './app.ts';
export { ConfigError, loadConfig, SETTINGS, type ClientChecks, type ServerConfig } from './platform/config.ts';
export type { DirectCallDecision, ModelContext, ModelDecision, ModelFunction } from './engine/stand-ins/model-decision.ts';
export { loadScenarioFile, parseScenarios, ScenarioError, type ScenarioFile, type ScenarioRule } from './engine/stand-ins/scenario-model.ts';
export type { CodeInterpreterResult, HostedHandlers, HostedShellResult } from './engine/stand-ins/hosted-tools.ts';
export { createResponseStore, STORE_KINDS, type CreateResponseStoreOptions, type StoreKind } from './platform/stores/create-store.ts';
export type { ResponseStore, StoredResponse } from './platform/stores/response-store.ts';
export { API_ERRORS, type ApiErrorCode } from '../schemas/error-codes.ts';
