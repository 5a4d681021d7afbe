import type { ToolSummary } from '../../conversation/tool-set.ts';
import { compileValidator, ToolSchemaError, type Validator } from '../../../../runtime/index.ts';
import { readMessage, type MessageText } from './message-text.ts';
import { argumentCandidates, customInput, type ArgumentCandidate } from './sample-arguments.ts';
import { isNode, propertySchema, resolved, typesOf, type SchemaNode } from './schema-nodes.ts';
import { chooseTools, MAX_AUTOPILOT_CALLS, type ToolChoice } from './tool-choice.ts';
import { valueFromText } from './text-values.ts';

/**
 * The calls the autopilot makes for a message, worked out in its thread (autopilot-thread.ts):
 * which tools, who calls each (a program, or the model directly), their arguments, and which
 * argument waits on another call's output: a required property the message gives no value for,
 * which another chosen tool's `output_schema` declares (`customer_id` from `find_customer`),
 * is taken from that call's result, in a later step of the program.
 */

/** A tool the autopilot may call: its summary, with the built-ins' parameters filled in. */
export type PlannableTool = ToolSummary;

export interface PlanRequest {
  readonly tools: readonly PlannableTool[];
  readonly message: string;
  readonly seed: number;
  /** Programs are enabled for this request. */
  readonly programmatic: boolean;
  /** `tool_choice` names the tools: call them, whatever the message says. */
  readonly forced?: boolean;
}

/** An argument taken from an earlier call's output: `property` ← `calls[call].field`. */
export interface OutputReference {
  readonly property: string;
  readonly call: number;
  readonly field: string;
}

export interface PlannedCall {
  readonly tool: string;
  readonly kind: string;
  /** A program makes the call, or the model directly (a tool only the model may call). */
  readonly via: 'program' | 'direct';
  /** A JSON tool's candidate arguments, the one to use first: the first its parameters accept. None: every one made was too large. */
  readonly candidates?: readonly ArgumentCandidate[];
  /** Whether its parameters accept the first candidate (or cannot be checked: ajv does not compile them). */
  readonly valid: boolean;
  /** A text tool's input (a custom tool). */
  readonly input?: string;
  /** Arguments taken from earlier calls' outputs: a program's, or (a round later) the model's own. */
  readonly references: readonly OutputReference[];
  /** The fields of its `output_schema`, which the program reads. */
  readonly outputFields: readonly string[];
}

export interface CallPlan {
  readonly calls: readonly PlannedCall[];
  readonly choice: ToolChoice['reason'];
}

/** The tool kinds the model can call directly (the emulator runs the others only for programs). */
const DIRECT_KINDS = new Set(['function', 'custom', 'shell', 'apply_patch']);
/** The kinds whose input is one string. */
const TEXT_KINDS = new Set(['custom']);

function whoCalls(tool: ToolSummary, programmatic: boolean): 'program' | 'direct' | undefined {
  if (programmatic && tool.callers.includes('programmatic')) return 'program';
  if (tool.callers.includes('direct') && DIRECT_KINDS.has(tool.type)) return 'direct';
  return undefined;
}

function outputFieldsOf(tool: ToolSummary): string[] {
  const schema = resolved(tool.outputSchema, isNode(tool.outputSchema) ? tool.outputSchema : {});
  return schema && isNode(schema['properties']) ? Object.keys(schema['properties']).slice(0, 64) : [];
}

/** The parameters a program tool of this kind checks its arguments against (the built-ins have their own). */
function parametersOf(tool: ToolSummary): unknown {
  return tool.parameters ?? { type: 'object', properties: {} };
}

/**
 * The required top-level properties of `tool` the message gives no value for that an earlier
 * chosen call's output declares with a type they share.
 */
function referencesOf(
  tool: PlannableTool,
  index: number,
  chosen: readonly PlannableTool[],
  vias: readonly (string | undefined)[],
  message: MessageText,
): OutputReference[] {
  const root = isNode(tool.parameters) ? tool.parameters : undefined;
  if (!root || !Array.isArray(root['required'])) return [];
  const references: OutputReference[] = [];
  for (const property of root['required']) {
    if (typeof property !== 'string') continue;
    const schema = propertySchema(root, property, root);
    if (!schema || valueFromText(property, schema, root, message) !== undefined) continue;
    const wanted = typesOf(schema, root);
    for (let earlier = 0; earlier < index; earlier++) {
      const source = chosen[earlier]!;
      // A program's call waits on the program's calls; the model's own on its own, a round later.
      if (vias[earlier] !== vias[index]) continue;
      const outputRoot = isNode(source.outputSchema) ? source.outputSchema : undefined;
      const field = outputRoot && propertySchema(outputRoot, property, outputRoot);
      if (!field) continue;
      const offered = typesOf(field as SchemaNode, outputRoot);
      if (wanted.size > 0 && offered.size > 0 && ![...wanted].some((type) => offered.has(type))) continue;
      references.push({ property, call: earlier, field: property });
      break;
    }
  }
  return references;
}

/** What the built-in tools are given, from the message where it says: its `code spans` as commands or code, a file it names. */
function builtInCandidates(kind: string, message: MessageText): ArgumentCandidate[] {
  switch (kind) {
    case 'shell':
    case 'hosted_shell':
      return [
        { value: { commands: message.code.length > 0 ? message.code.slice(0, 4) : ['pwd'] }, fromText: message.code.length > 0 ? ['commands ← message'] : [] },
      ];
    case 'code_interpreter':
      return [{ value: { code: message.code[0] ?? 'print("ptc-emulator autopilot")' }, fromText: message.code.length > 0 ? ['code ← message'] : [] }];
    case 'apply_patch': {
      const path = message.tokens.find((token) => /^[\w./-]+\.[A-Za-z0-9]{1,8}$/.test(token) && !/^\d+(\.\d+)*$/.test(token));
      return [
        {
          value: { type: 'create_file', path: path ?? 'autopilot.txt', diff: '+Written by the ptc-emulator autopilot.\n' },
          fromText: path ? ['path ← message'] : [],
        },
      ];
    }
    default:
      return [];
  }
}

/** Validators of the schemas this thread has checked arguments against, by the schema's JSON: a conversation sends the same tools each turn. */
const validators = new Map<string, Validator | undefined>();
const MAX_VALIDATORS = 64;

function validatorFor(schema: unknown): Validator | undefined {
  if (!isNode(schema)) return undefined;
  const key = JSON.stringify(schema);
  if (validators.has(key)) return validators.get(key);
  let validator: Validator | undefined;
  try {
    validator = compileValidator(schema);
  } catch (error) {
    // A schema ajv cannot compile checks nothing: a program's call of the tool is not checked either.
    if (!(error instanceof ToolSchemaError)) throw error;
  }
  if (validators.size >= MAX_VALIDATORS) validators.delete(validators.keys().next().value!);
  validators.set(key, validator);
  return validator;
}

/**
 * The candidates with the first one the parameters accept put first, checked here (ajv, as a
 * program's call is checked), under the thread's deadline: a pattern that makes ajv's check
 * slow costs this plan, never the schema thread every request shares.
 */
function checked(candidates: readonly ArgumentCandidate[], parameters: unknown): { candidates: ArgumentCandidate[]; valid: boolean } {
  const validator = validatorFor(parameters);
  if (!validator) return { candidates: [...candidates], valid: true };
  const index = candidates.findIndex((candidate) => validator.validate(candidate.value));
  if (index === -1) return { candidates: [...candidates], valid: false };
  return { candidates: [candidates[index]!, ...candidates.filter((_, other) => other !== index)], valid: true };
}

export function planCalls(request: PlanRequest): CallPlan {
  const message = readMessage(request.message);
  const callable = request.tools.filter((tool) => whoCalls(tool, request.programmatic) !== undefined);
  const choice: ToolChoice = request.forced ? { tools: callable.slice(0, MAX_AUTOPILOT_CALLS), reason: 'forced' } : chooseTools(callable, message);
  const chosen = choice.tools as readonly PlannableTool[];
  const vias = chosen.map((tool) => whoCalls(tool, request.programmatic));
  const calls = chosen.map((tool, index): PlannedCall => {
    const via = vias[index]!;
    const seed = (request.seed + index * 7919) >>> 0;
    const references = referencesOf(tool, index, chosen, vias, message);
    const base = { tool: tool.name, kind: tool.type, via, references, outputFields: outputFieldsOf(tool) };
    if (TEXT_KINDS.has(tool.type)) return { ...base, input: customInput(tool.grammar, message, seed), valid: true };
    return { ...base, ...checked([...builtInCandidates(tool.type, message), ...argumentCandidates(parametersOf(tool), message, seed)], tool.parameters) };
  });
  return { calls, choice: choice.reason };
}
