import { z } from 'zod';
import { textMatches } from './text-matcher.ts';

/**
 * The hosted tools the emulator stands in for: the hosted shell and code_interpreter. Nothing is
 * ever run on the host: each command or piece of code gets the output a scenario (or an
 * embedding test) gives it, and anything unscripted a documented refusal.
 */

export interface HostedShellResult {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code, or `timeout` for a command that ran out of time. */
  readonly exit_code: number | 'timeout';
}

export interface CodeInterpreterResult {
  readonly logs: string;
  /** URLs of images the code drew. */
  readonly images?: readonly string[];
}

/** In-process handlers for tests that embed the server; `undefined` passes to the scenario, then the refusal. */
export interface HostedHandlers {
  readonly shell?: (command: string) => HostedShellResult | undefined;
  readonly codeInterpreter?: (code: string) => CodeInterpreterResult | undefined;
}

/** The `hosted` section of a scenario file. */
export const HostedScenarios = z.strictObject({
  shell: z
    .array(
      z.strictObject({
        command: z.string().min(1),
        stdout: z.string().default(''),
        stderr: z.string().default(''),
        exit_code: z.union([z.number().int(), z.literal('timeout')]).default(0),
      }),
    )
    .default([]),
  code_interpreter: z.array(z.strictObject({ code: z.string().min(1), logs: z.string().default(''), images: z.array(z.string()).optional() })).default([]),
});
export type HostedScenarios = z.infer<typeof HostedScenarios>;

export const HOSTED_SHELL_REFUSAL: HostedShellResult = {
  stdout: '',
  stderr:
    'ptc-emulator: the hosted shell is emulated and runs nothing; no scripted output matches this command. Add one under hosted.shell in the scenario file (docs/TOOLS.md).',
  exit_code: 127,
};

export const CODE_INTERPRETER_REFUSAL =
  'ptc-emulator: code_interpreter is emulated and runs nothing; no scripted output matches this code. Add one under hosted.code_interpreter in the scenario file (docs/TOOLS.md).';

/** Answers hosted calls: the embedding test's handlers first, then the scenario's first match. */
export class HostedTools {
  readonly #handlers: HostedHandlers;
  readonly #scenarios: HostedScenarios;

  constructor(handlers: HostedHandlers = {}, scenarios: HostedScenarios = { shell: [], code_interpreter: [] }) {
    this.#handlers = handlers;
    this.#scenarios = scenarios;
  }

  shell(command: string): HostedShellResult {
    const scripted = this.#handlers.shell?.(command) ?? this.#scenarios.shell.find((entry) => textMatches(entry.command, command));
    if (!scripted) return HOSTED_SHELL_REFUSAL;
    return { stdout: scripted.stdout, stderr: scripted.stderr, exit_code: scripted.exit_code };
  }

  /** The run's output, or undefined when nothing scripted matches (the call fails with CODE_INTERPRETER_REFUSAL). */
  codeInterpreter(code: string): CodeInterpreterResult | undefined {
    return this.#handlers.codeInterpreter?.(code) ?? this.#scenarios.code_interpreter.find((entry) => textMatches(entry.code, code));
  }
}
