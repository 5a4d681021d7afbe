/** Test helpers: an emulator on a free port for a test suite, with nothing written to disk. */
export { startEmulator, type RunningEmulator, type StartEmulatorOptions } from './start-emulator.ts';
export type { JournalEntry } from '../server/engine/journal-details.ts';
export type { ModelContext, ModelDecision, ModelFunction } from '../server/engine/stand-ins/model-decision.ts';
