import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { formatParam } from '../../../platform/request-validation.ts';
import { keyDigest, type CassetteKey } from './cassette-key.ts';
import { EmulatorError } from '../../../../runtime/index.ts';

/**
 * One cassette entry: a model decision and the key it answers, one YAML file each
 * (docs/CASSETTES.md). Written with keys in a fixed order and no timestamps or ids, so that a
 * re-recording that decides the same writes the same bytes and a review diff shows only what
 * changed.
 */

const KeyMessage = z.strictObject({ role: z.string(), text: z.string() });

export const CassetteKeySchema = z.strictObject({
  model: z.string(),
  instructions: z.string().nullable(),
  tools: z.array(z.string()),
  tools_sha256: z.string(),
  turn: z.number().int().min(0),
  phase: z.enum(['user_turn', 'after_program', 'after_calls']),
  rounds: z.number().int().min(2).optional(),
  messages: z.array(KeyMessage),
});

const RecordedCall = z.strictObject({
  name: z.string().min(1),
  namespace: z.string().min(1).optional(),
  /** A function tool's arguments, parsed (a string when they were not JSON). */
  arguments: z.unknown().optional(),
  /** A custom tool's input. */
  input: z.string().optional(),
});
export type RecordedCall = z.infer<typeof RecordedCall>;

/** A call a program made, and in which of its pauses (1: the first response that carried its calls). */
const ExpectedCall = RecordedCall.extend({ batch: z.number().int().min(1) });
export type ExpectedCall = z.infer<typeof ExpectedCall>;

const Decision = z
  .strictObject({
    reasoning: z.string().optional(),
    program: z.string().min(1).optional(),
    calls: z.array(RecordedCall).min(1).optional(),
    message: z.string().optional(),
    refusal: z.string().optional(),
  })
  .refine((decision) => [decision.program, decision.calls, decision.message, decision.refusal].filter((part) => part !== undefined).length === 1, {
    message: 'a decision is exactly one of program, calls, message or refusal',
  });
export type Decision = z.infer<typeof Decision>;

/** What the upstream runtime did with a recorded program: a replay is compared with it. */
const Expectations = z.strictObject({
  calls: z.array(ExpectedCall).default([]),
  output: z.strictObject({ status: z.enum(['completed', 'incomplete']), result: z.string() }).optional(),
});
export type Expectations = z.infer<typeof Expectations>;

export const CassetteEntry = z.strictObject({
  key: CassetteKeySchema,
  decision: Decision,
  expect: Expectations.optional(),
});
export type CassetteEntry = z.infer<typeof CassetteEntry>;

export interface LoadedEntry {
  readonly file: string;
  readonly entry: CassetteEntry;
}

export class CassetteError extends EmulatorError {
  override readonly name = 'CassetteError';
  readonly code = 'PTC_ERR_CASSETTE';
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40)
      .replace(/-+$/, '') || 'no-message'
  );
}

/** The file an entry lives in: readable (turn, phase, the last user message) and unique (the key's digest). */
export function entryFileName(key: CassetteKey): string {
  const lastUser = [...key.messages].reverse().find((message) => message.role === 'user')?.text ?? '';
  return `turn${key.turn}-${key.phase.replaceAll('_', '-')}-${slug(lastUser)}-${keyDigest(key).slice(0, 12)}.yaml`;
}

const HEADER = '# ptc-emulator cassette entry (docs/CASSETTES.md): one model decision and the key it answers.\n';

/** Writes an entry (replacing one with the same key) atomically: a reader never sees half a file. */
export function writeEntry(dir: string, entry: CassetteEntry): string {
  mkdirSync(dir, { recursive: true });
  const file = entryFileName(entry.key);
  const text = HEADER + stringifyYaml(entry, { lineWidth: 0, blockQuote: 'literal' });
  const temporary = join(dir, `.${file}.tmp`);
  writeFileSync(temporary, text);
  renameSync(temporary, join(dir, file));
  return file;
}

/** The entry files of a cassette directory, by name (hidden files, such as writeEntry's temporary ones, aside). */
export function entryFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((file) => /\.ya?ml$/i.test(file) && !file.startsWith('.'))
      .sort();
  } catch (error) {
    throw new CassetteError(`Cassette directory ${dir}: ${(error as Error).message}`);
  }
}

/** The entry in `file` of `dir`; a file that is not an entry is an error naming it. */
export function readEntry(dir: string, file: string): CassetteEntry {
  let document: unknown;
  try {
    document = parseYaml(readFileSync(join(dir, file), 'utf8'));
  } catch (error) {
    throw new CassetteError(`Cassette ${join(dir, file)}: ${(error as Error).message}`);
  }
  const parsed = CassetteEntry.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CassetteError(`Cassette ${join(dir, file)}: ${formatParam(issue.path) || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}
