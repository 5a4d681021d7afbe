import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { Knobs } from '../../../schemas/knobs.ts';
import { formatParam } from '../../platform/request-validation.ts';
import { valueAt } from '../../platform/value-at.ts';
import { HostedScenarios } from './hosted-tools.ts';
import { textMatches } from './text-matcher.ts';
import { directRounds } from '../conversation/direct-rounds.ts';
import type { ModelContext, ModelFunction } from './model-decision.ts';
import { EmulatorError } from '../../../runtime/index.ts';

/** A text matcher: `/regex/flags`, or a case-insensitive substring. */
const Matcher = z.string().min(1);

/** Calls the stand-in makes itself: a function tool's `arguments`, or a custom tool's `input`. */
const Calls = z
  .array(
    z
      .strictObject({
        name: z.string().min(1),
        namespace: z.string().min(1).optional(),
        arguments: z.record(z.string(), z.unknown()).optional(),
        input: z.string().optional(),
      })
      .refine((call) => call.arguments === undefined || call.input === undefined, {
        message: 'a call has arguments (a function tool) or input (a custom tool), not both',
      }),
  )
  .min(1);

const Rule = z
  .strictObject({
    name: z.string().optional(),
    match: z
      .strictObject({
        user: Matcher.optional(),
        model: Matcher.optional(),
        tools: z.array(z.string()).optional(),
        turn: z.number().int().min(1).optional(),
        metadata: z.record(z.string(), z.string()).optional(),
      })
      .default({}),
    reasoning: z.string().optional(),
    /** A tool search to run first: its query loads deferred tools, then the rule goes on. */
    search: z.string().min(1).optional(),
    program: z.string().min(1).optional(),
    calls: Calls.optional(),
    /** Further rounds of direct calls, each made once the previous round's outputs are back. */
    then: z
      .array(z.strictObject({ calls: Calls }))
      .min(1)
      .optional(),
    message: z.string().optional(),
    /** Client-loop testing knobs for every request this rule matches (docs/KNOBS.md). */
    knobs: Knobs.optional(),
  })
  .refine((rule) => !(rule.program !== undefined && rule.calls !== undefined), {
    message: 'a rule has either program or calls, not both',
  })
  .refine((rule) => rule.then === undefined || rule.calls !== undefined, { message: 'then follows calls: a rule with then needs calls' })
  .refine((rule) => rule.program !== undefined || rule.calls !== undefined || rule.message !== undefined || rule.knobs !== undefined, {
    message: 'a rule needs program, calls, message or knobs',
  });
export type ScenarioRule = z.infer<typeof Rule>;

/** Rules decide turns; `hosted` scripts what the emulated hosted shell and code_interpreter answer. */
export const ScenarioFile = z
  .strictObject({ rules: z.array(Rule).default([]), hosted: HostedScenarios.optional() })
  .refine((file) => file.rules.length > 0 || file.hosted !== undefined, { message: 'a scenario file needs rules, hosted outputs, or both' });
export type ScenarioFile = z.infer<typeof ScenarioFile>;

export class ScenarioError extends EmulatorError {
  override readonly name = 'ScenarioError';
  readonly code = 'PTC_ERR_SCENARIO';
}

/** Reads a YAML or JSON scenario file; errors name the file and the offending field. */
export function loadScenarioFile(path: string): ScenarioFile {
  let document: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    document = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ScenarioError(`Scenario file ${path}: ${(error as Error).message}`);
  }
  return parseScenarios(document, path);
}

export function parseScenarios(document: unknown, source = 'scenarios'): ScenarioFile {
  const parsed = ScenarioFile.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ScenarioError(`Scenario file ${source}: ${formatParam(issue.path) || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

function ruleMatches(rule: ScenarioRule, context: ModelContext): boolean {
  const { match } = rule;
  if (match.user !== undefined && !textMatches(match.user, context.lastUserText)) return false;
  if (match.model !== undefined && !textMatches(match.model, context.model)) return false;
  if (match.turn !== undefined && match.turn !== context.turn) return false;
  if (match.tools?.some((name) => !context.tools.some((tool) => tool.name === name))) return false;
  if (match.metadata && Object.entries(match.metadata).some(([key, value]) => context.metadata[key] !== value)) return false;
  return true;
}

function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Fills `{{result}}`, `{{result.field}}`, `{{status}}`, `{{user}}`, `{{outputs}}`,
 * `{{output}}` and `{{output.field}}`; a placeholder with no value becomes empty.
 */
export function renderTemplate(template: string, context: ModelContext): string {
  return template.replace(/\{\{\s*([A-Za-z_][\w.]*)\s*\}\}/g, (_, expression: string) => {
    const [head, ...path] = expression.split('.');
    let value: unknown;
    if (head === 'user') value = context.lastUserText;
    else if (head === 'status') value = context.program?.status;
    else if (head === 'result') value = path.length ? valueAt(parsedOrText(context.program?.result ?? ''), path) : context.program?.result;
    else if (head === 'outputs') value = JSON.stringify((context.callOutputs ?? []).map((call) => call.output));
    else if (head === 'output') {
      const first = context.callOutputs?.[0]?.output ?? '';
      value = path.length ? valueAt(parsedOrText(first), path) : first;
    }
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** The knobs of the first rule that matches the request, whatever the phase of the turn. */
export function scenarioKnobs(scenarios: ScenarioFile): (context: ModelContext) => Knobs | undefined {
  return (context) => scenarios.rules.find((rule) => ruleMatches(rule, context))?.knobs;
}

/**
 * Scenario stand-in: the first rule whose `match` fits the request decides the turn. On the
 * user's turn the rule's program, direct calls or message; once its program or calls are
 * done, its `message` template (default: the program's result, or the call outputs).
 */
export function scenarioModel(scenarios: ScenarioFile): ModelFunction {
  return (context) => {
    // A rule with only knobs shapes requests without deciding them.
    const rule = scenarios.rules.find((candidate) => ruleMatches(candidate, context));
    if (!rule || (rule.program === undefined && rule.calls === undefined && rule.message === undefined)) return undefined;
    const reasoning = rule.reasoning === undefined ? {} : { reasoning: rule.reasoning };
    switch (context.phase) {
      case 'user_turn':
      case 'after_search':
        if (rule.search !== undefined && context.phase === 'user_turn') return { type: 'tool_search', query: rule.search, ...reasoning };
        if (rule.program !== undefined) return { type: 'program', code: rule.program, ...reasoning };
        if (rule.calls !== undefined) return { type: 'function_calls', calls: rule.calls, ...reasoning };
        return { type: 'message', text: renderTemplate(rule.message ?? '', context), ...reasoning };
      case 'after_program':
        if (rule.program === undefined) return undefined;
        return { type: 'message', text: rule.message === undefined ? (context.program?.result ?? '') : renderTemplate(rule.message, context) };
      case 'after_calls': {
        if (rule.calls === undefined) return undefined;
        const next = rule.then?.[directRounds(context.history) - 1];
        if (next) return { type: 'function_calls', calls: next.calls };
        return {
          type: 'message',
          text: rule.message === undefined ? (context.callOutputs ?? []).map((call) => call.output).join('\n') : renderTemplate(rule.message, context),
        };
      }
    }
  };
}
