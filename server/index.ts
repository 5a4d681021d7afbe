/** The package's main entry: the emulator's server, to embed or to start from code. */
export { buildServer, type BuildServerOptions } from './app.ts';
export { ConfigError, loadConfig, SETTINGS, type ClientChecks, type ServerConfig } from './config.ts';
export type { DirectCallDecision, ModelContext, ModelDecision, ModelFunction } from './model/model-decision.ts';
export { loadScenarioFile, parseScenarios, ScenarioError, type ScenarioFile, type ScenarioRule } from './model/scenario-model.ts';
export type { CodeInterpreterResult, HostedHandlers, HostedShellResult } from './model/hosted-tools.ts';
export { createResponseStore, STORE_KINDS, type CreateResponseStoreOptions, type StoreKind } from './stores/create-store.ts';
export type { ResponseStore, StoredResponse } from './stores/response-store.ts';
export { API_ERRORS, type ApiErrorCode } from '../schemas/error-codes.ts';
