import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EvalRequestError } from '../cli/eval/responses-client.ts';
import { UsageError } from '../cli/usage-error.ts';
import {
  EmulatorError,
  FingerprintError,
  FingerprintTooLargeError,
  MissingNodeFlagError,
  ProgramBusyError,
  SchemaDeadlineError,
  SchemaThreadBusyError,
  SchemaTooComplexError,
  ToolSchemaError,
  WorkerDeathError,
} from '../runtime/index.ts';
import { ApiError } from '../server/platform/api-error.ts';
import { CassetteError } from '../server/engine/stand-ins/cassettes/cassette-entry.ts';
import { ConfigError } from '../server/platform/config.ts';
import { DeadlineExceeded, McpConnectError } from '../server/platform/mcp/mcp-failure.ts';
import { ScenarioError } from '../server/engine/stand-ins/scenario-model.ts';
import { OffLoopDeadlineError, OffLoopQueueFullError } from '../server/platform/off-loop-jobs.ts';
import { UnknownCursorError } from '../server/platform/stores/conversation-store.ts';
import { StoreUnavailableError } from '../server/platform/stores/response-store.ts';
import { TurnStopped } from '../server/platform/turn-stopped.ts';

/**
 * Every error class of the product, as one table (undici's test/errors.js is the model): each
 * has its class's `name` and a `code` of its own, fixed, `PTC_ERR_…`, so that a caller tells
 * them apart without reading a message; a subclass is still an instance of what it refines.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));

const TABLE: readonly (readonly [new (...args: never[]) => EmulatorError, () => EmulatorError, string])[] = [
  [MissingNodeFlagError, () => new MissingNodeFlagError(), 'PTC_ERR_MISSING_NODE_FLAG'],
  [ProgramBusyError, () => new ProgramBusyError('call_1'), 'PTC_ERR_PROGRAM_BUSY'],
  [FingerprintError, () => new FingerprintError('bad seal'), 'PTC_ERR_FINGERPRINT'],
  [FingerprintTooLargeError, () => new FingerprintTooLargeError('too large'), 'PTC_ERR_FINGERPRINT_TOO_LARGE'],
  [ToolSchemaError, () => new ToolSchemaError('no compile'), 'PTC_ERR_TOOL_SCHEMA'],
  [SchemaTooComplexError, () => new SchemaTooComplexError('too complex'), 'PTC_ERR_SCHEMA_TOO_COMPLEX'],
  [SchemaDeadlineError, () => new SchemaDeadlineError(10), 'PTC_ERR_SCHEMA_DEADLINE'],
  [SchemaThreadBusyError, () => new SchemaThreadBusyError('busy'), 'PTC_ERR_SCHEMA_THREAD_BUSY'],
  [WorkerDeathError, () => new WorkerDeathError('exit', 'the worker exited'), 'PTC_ERR_WORKER_DEATH'],
  [ScenarioError, () => new ScenarioError('bad rule'), 'PTC_ERR_SCENARIO'],
  [StoreUnavailableError, () => new StoreUnavailableError('down'), 'PTC_ERR_STORE_UNAVAILABLE'],
  [UnknownCursorError, () => new UnknownCursorError('no such item'), 'PTC_ERR_UNKNOWN_CURSOR'],
  [ConfigError, () => new ConfigError('PORT is not a number'), 'PTC_ERR_CONFIG'],
  [CassetteError, () => new CassetteError('bad cassette'), 'PTC_ERR_CASSETTE'],
  [DeadlineExceeded, () => new DeadlineExceeded(5, 'waiting'), 'PTC_ERR_MCP_DEADLINE'],
  [McpConnectError, () => new McpConnectError([]), 'PTC_ERR_MCP_CONNECT'],
  [OffLoopQueueFullError, () => new OffLoopQueueFullError('full'), 'PTC_ERR_OFF_LOOP_QUEUE_FULL'],
  [OffLoopDeadlineError, () => new OffLoopDeadlineError('late'), 'PTC_ERR_OFF_LOOP_DEADLINE'],
  [TurnStopped, () => new TurnStopped('cancelled'), 'PTC_ERR_TURN_STOPPED'],
  [UsageError, () => new UsageError('unknown flag'), 'PTC_ERR_USAGE'],
  [EvalRequestError, () => new EvalRequestError('failed'), 'PTC_ERR_EVAL_REQUEST'],
];

describe('error classes', () => {
  it.each(TABLE.map(([errorClass, make, code]) => [errorClass.name, make, code] as const))(
    '%s has its name, the code %s of its own, and a message',
    (name, make, code) => {
      const error = make();
      expect(error).toBeInstanceOf(Error);
      expect(error).toBeInstanceOf(EmulatorError);
      expect(error.name).toBe(name);
      expect(error.code).toBe(code);
      expect(error.message.length).toBeGreaterThan(0);
      expect(String(error)).toBe(`${name}: ${error.message}`);
    },
  );

  it('codes are PTC_ERR_ names, one per class', () => {
    const codes = TABLE.map(([, , code]) => code);
    expect(codes.every((code) => /^PTC_ERR_[A-Z_]+$/.test(code))).toBe(true);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('a subclass refines its parent: a deadline is a schema too complex is a schema error', () => {
    expect(new SchemaDeadlineError(1)).toBeInstanceOf(SchemaTooComplexError);
    expect(new SchemaTooComplexError('x')).toBeInstanceOf(ToolSchemaError);
  });

  it('ApiError, the answer to a client, has its name and carries the wire code of the error it is', () => {
    const error = new ApiError('previous_response_not_found', 'No such response', 'previous_response_id');
    expect(error.name).toBe('ApiError');
    expect(error.code).toBe('previous_response_not_found');
    expect(error.status).toBe(400);
  });

  it('the table holds every exported error class of the product', () => {
    const exported = ['runtime', 'server', 'cli', 'testing', 'schemas'].flatMap((folder) =>
      readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.ts'))
        .flatMap((file) =>
          [...readFileSync(join(ROOT, folder, file), 'utf8').matchAll(/export (?:abstract )?class (\w+) extends \w*Error\b/g)].map((match) => match[1]!),
        ),
    );
    const tabled = new Set([...TABLE.map(([errorClass]) => errorClass.name), 'ApiError', 'EmulatorError']);
    expect(exported.filter((name) => !tabled.has(name))).toEqual([]);
  });
});
