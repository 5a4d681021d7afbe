import { randomBytes } from 'node:crypto';
import net from 'node:net';
import fc from 'fast-check';
import { expect } from 'vitest';
import { API_ERRORS, type ApiErrorCode } from '../../schemas/error-codes.ts';
import { KEPT_ITEM_TYPES } from '../../schemas/items.ts';
import { ErrorEnvelope, ResponseObject } from '../../schemas/response.ts';
import { REQUEST_ID } from './api-errors.ts';

/**
 * Shared pieces of the HTTP fuzz suite (test/fuzz-http.test.ts): JSON trees that can hold
 * what `JSON.stringify` cannot write (absurd nesting, number literals beyond doubles), the
 * oracles every answer is judged by (the OpenAI error envelope, the `param` it names, the strict
 * Response schema), generators of valid requests and of near-miss mutations, the knob-header
 * oracle, and a raw HTTP/1.1 client over `net`.
 */

// ---- JSON trees with markers ------------------------------------------------------------------

/** `depth` levels of `[[[…1…]]]` or `{"a":{"a":…1…}}`, written as text (no recursion anywhere on our side). */
export class Deep {
  constructor(
    readonly depth: number,
    readonly kind: 'array' | 'object',
  ) {}
  [fc.toStringMethod](): string {
    return `Deep(${this.depth}, ${this.kind})`;
  }
}

/** A number literal written verbatim, e.g. `1e400` (Infinity once parsed) or 30 digits. */
export class RawNumber {
  constructor(readonly literal: string) {}
  [fc.toStringMethod](): string {
    return `RawNumber(${this.literal})`;
  }
}

export type Tree = null | boolean | number | string | Deep | RawNumber | Tree[] | { [key: string]: Tree };
export type TreeObject = { [key: string]: Tree };

export function isObject(value: unknown): value is TreeObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Deep) && !(value instanceof RawNumber);
}

/** Sets an own, enumerable property, `__proto__` included (plain assignment would set the prototype). */
export function setKey(target: TreeObject, key: string, value: Tree): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A deep copy that keeps markers and own `__proto__` keys (structuredClone keeps neither). */
export function cloneTree(tree: Tree): Tree {
  if (Array.isArray(tree)) return tree.map(cloneTree);
  if (isObject(tree)) {
    const copy: TreeObject = {};
    for (const key of Object.keys(tree)) setKey(copy, key, cloneTree(tree[key]!));
    return copy;
  }
  return tree;
}

function deepText(deep: Deep): string {
  return deep.kind === 'array' ? `${'['.repeat(deep.depth)}1${']'.repeat(deep.depth)}` : `${'{"a":'.repeat(deep.depth)}1${'}'.repeat(deep.depth)}`;
}

/** The request body as sent: JSON text with every marker written out. */
export function toJsonText(tree: Tree): string {
  const nonce = `@@mark${randomBytes(6).toString('hex')}_`;
  const marks: string[] = [];
  const text = JSON.stringify(tree, (_key, value: unknown) => {
    if (value instanceof Deep) marks.push(deepText(value));
    else if (value instanceof RawNumber) marks.push(value.literal);
    else return value;
    return `${nonce}${marks.length - 1}`;
  });
  return text.replace(new RegExp(`"${nonce}(\\d+)"`, 'g'), (_match, index: string) => marks[Number(index)]!);
}

export function hasMarkers(tree: Tree): boolean {
  const stack: Tree[] = [tree];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node instanceof Deep || node instanceof RawNumber) return true;
    if (Array.isArray(node)) stack.push(...node);
    else if (isObject(node)) stack.push(...Object.values(node));
  }
  return false;
}

// ---- paths and the `param` oracle --------------------------------------------------------------

export type Segment = string | number;

/** `input[2].call_id`: how OpenAI names a parameter. Written here independently of the server's formatter. */
export function formatPath(path: readonly Segment[]): string {
  return path.map((segment, index) => (typeof segment === 'number' ? `[${segment}]` : index === 0 ? segment : `.${segment}`)).join('');
}

export interface Node {
  readonly path: Segment[];
  readonly value: Tree;
}

/** Every node of the tree with its path, root first (iterative: trees may be wide). */
export function nodesOf(tree: Tree): Node[] {
  const nodes: Node[] = [];
  const stack: Node[] = [{ path: [], value: tree }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    nodes.push(node);
    const { value, path } = node;
    if (Array.isArray(value)) value.forEach((child, index) => stack.push({ path: [...path, index], value: child }));
    else if (isObject(value)) for (const key of Object.keys(value)) stack.push({ path: [...path, key], value: value[key]! });
  }
  return nodes;
}

/** Codes whose `param` names a field that is absent (it must be there, and its object is). */
const ABSENT_PARAM_CODES: ReadonlySet<string> = new Set(['missing_required_parameter', 'caller_missing']);

function insideDeep(param: string, base: string, deep: Deep): boolean {
  const rest = param.slice(base.length);
  if (!param.startsWith(base) || rest === '') return false;
  const step = deep.kind === 'array' ? '[0]' : base === '' ? 'a' : '.a';
  if (deep.kind === 'object' && base === '') {
    const parts = rest.split('.');
    return parts.length <= deep.depth && parts.every((part) => part === 'a');
  }
  if (rest.length % step.length !== 0 || rest.length / step.length > deep.depth) return false;
  return rest === step.repeat(rest.length / step.length);
}

/**
 * Why `param` does not name this request, or undefined when it does: a header the request sent,
 * or a path of the body that holds a value (for a missing field: an absent key of an object
 * that is there).
 */
export function paramProblem(param: string | null, code: string, body: Tree | undefined, headerNames: ReadonlySet<string>): string | undefined {
  if (param === null) return undefined;
  if (headerNames.has(param)) return undefined;
  if (param.startsWith('x-')) return `param '${param}' names a header the request did not send`;
  if (body === undefined) return `param '${param}' names a field, but the body is not JSON`;
  const nodes = nodesOf(body);
  if (ABSENT_PARAM_CODES.has(code)) {
    for (const node of nodes) {
      if (!isObject(node.value)) continue;
      const base = formatPath(node.path);
      const prefix = base === '' ? '' : `${base}.`;
      if (param.startsWith(prefix) && !Object.hasOwn(node.value, param.slice(prefix.length))) return undefined;
    }
    return `code ${code} names '${param}', which is not an absent field of an object in the request`;
  }
  for (const node of nodes) {
    const base = formatPath(node.path);
    if (base === param && node.path.length > 0) return undefined;
    if (node.value instanceof Deep && insideDeep(param, base, node.value)) return undefined;
  }
  return `code ${code} names '${param}', but the request has no value there`;
}

// ---- answers and their oracles -------------------------------------------------------------------

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/** Longest we wait for an answer before calling it a hang: a guard, not a performance bound. */
export const HANG_MS = 15_000;

function preview(request: string | undefined): string {
  if (request === undefined) return '(no body)';
  return request.length > 600 ? `${request.slice(0, 600)}… (${request.length} chars)` : request;
}

export async function postResponses(baseURL: string, body: string | undefined, headers: readonly (readonly [string, string])[] = []): Promise<HttpAnswer> {
  const sent = new Headers({ 'content-type': 'application/json' });
  for (const [name, value] of headers) sent.append(name, value);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: sent,
      signal: AbortSignal.timeout(HANG_MS),
      ...(body === undefined ? {} : { body }),
    });
    text = await response.text();
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      throw new Error(`HANG: no complete answer within ${HANG_MS} ms to POST /v1/responses with body ${preview(body)}`);
    }
    throw error;
  }
  const flat: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    flat[name] = value;
  });
  return { status: response.status, headers: flat, text };
}

export interface ErrorContext {
  /** The body as the server received it, for the `param` check; undefined when `param` is not judged. */
  readonly body?: Tree;
  readonly headerNames?: ReadonlySet<string>;
  /** `simulated_error` (the `error_status` knob) may answer with any status it was told to. */
  readonly simulatedStatus?: number;
  /** What was sent, for the failure message. */
  readonly request?: string;
}

export type ApiErrorBody = ErrorEnvelope['error'];

/**
 * A 4xx in OpenAI's exact envelope: `{error: {message, type, param, code}}` and nothing else,
 * a code the API declares with its status and type, a non-empty message, an `x-request-id`,
 * and (when the body is given) a `param` that names the request.
 */
export function expectErrorEnvelope(answer: HttpAnswer, context: ErrorContext = {}): ApiErrorBody {
  const where = `request ${preview(context.request)}\nanswer ${answer.status} ${answer.text.slice(0, 800)}`;
  if (context.simulatedStatus === undefined) {
    expect(answer.status, `expected a 4xx, ${where}`).toBeGreaterThanOrEqual(400);
    expect(answer.status, `expected a 4xx, never a 5xx: ${where}`).toBeLessThan(500);
  }
  expect(answer.headers['content-type'] ?? '(no content-type)', where).toMatch(/^application\/json/);
  expect(answer.headers['x-request-id'] ?? '(no x-request-id)', where).toMatch(REQUEST_ID);
  let json: unknown;
  try {
    json = JSON.parse(answer.text);
  } catch {
    throw new Error(`the error body is not JSON: ${where}`);
  }
  const parsed = ErrorEnvelope.safeParse(json);
  if (!parsed.success) throw new Error(`the error body is not OpenAI's envelope (${parsed.error.message}): ${where}`);
  const { error } = parsed.data;
  expect(error.code, `error.code must be one of the declared codes: ${where}`).not.toBeNull();
  const code = error.code as ApiErrorCode;
  expect(Object.hasOwn(API_ERRORS, code), `unknown error.code ${code}: ${where}`).toBe(true);
  const definition = API_ERRORS[code];
  if (code === 'simulated_error') {
    expect(answer.status, where).toBe(context.simulatedStatus);
  } else {
    expect(answer.status, `status of ${code}: ${where}`).toBe(definition.status);
    expect(error.type, `type of ${code}: ${where}`).toBe(definition.type);
  }
  expect(error.message.trim().length, `empty message: ${where}`).toBeGreaterThan(0);
  if (context.body !== undefined || context.headerNames !== undefined) {
    const problem = paramProblem(error.param, code, context.body, context.headerNames ?? new Set());
    if (problem) throw new Error(`WRONG PARAM: ${problem}: ${where}`);
  }
  return error;
}

/** Server-Sent Events as `{event, data}` pairs. */
export function sseEvents(text: string): { event: string; data: unknown }[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(frame)?.[1] ?? 'null';
      return { event, data: JSON.parse(data) as unknown };
    });
}

const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** A 200 carries a Response that passes the strict wire schema (in JSON, or in a stream's terminal event). */
export function expectResponseObject(answer: HttpAnswer, request?: string): ResponseObject {
  const where = `request ${preview(request)}\nanswer ${answer.status} ${answer.text.slice(0, 800)}`;
  expect(answer.status, where).toBe(200);
  expect(answer.headers['x-request-id'] ?? '(no x-request-id)', where).toMatch(REQUEST_ID);
  let candidate: unknown;
  if ((answer.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    const terminal = sseEvents(answer.text).filter((event) => TERMINAL_EVENTS.has(event.event));
    expect(terminal, `a stream ends with one terminal event: ${where}`).toHaveLength(1);
    candidate = (terminal[0]!.data as { response?: unknown }).response;
  } else {
    expect(answer.headers['content-type'] ?? '(no content-type)', where).toMatch(/^application\/json/);
    candidate = JSON.parse(answer.text);
  }
  const parsed = ResponseObject.safeParse(candidate);
  if (!parsed.success) throw new Error(`a 200 that is not a strict Response (${parsed.error.message}): ${where}`);
  return parsed.data;
}

/** 200 with a strict Response, or a 4xx in the envelope: what every answer of the suite must be. */
export function expectAnswer(answer: HttpAnswer, context: ErrorContext = {}): ResponseObject | ApiErrorBody {
  if (answer.status === 200) return expectResponseObject(answer, context.request);
  return expectErrorEnvelope(answer, context);
}

export async function expectHealthy(root: string): Promise<void> {
  const health = await fetch(`${root}/health`, { signal: AbortSignal.timeout(HANG_MS) });
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: 'ok' });
}

// ---- generators: text ---------------------------------------------------------------------------

const LONE_SURROGATES = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'];

export const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ' ', '\u0000', '\u202e', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🧪', '<|endoftext|>', 'a\uD800b', '\uDFFF', '%s%n{0}', '\\"', '\r\n'),
  },
);
const identifier = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);

// ---- generators: valid requests -------------------------------------------------------------------

const ECHOED_TOOLS: readonly TreeObject[] = [
  // Port 9 (discard) on loopback: nothing listens, so listing its tools fails at once with an error item.
  { type: 'mcp', server_label: 'deepwiki', server_url: 'http://127.0.0.1:9/mcp', require_approval: 'never' },
  { type: 'shell' },
  { type: 'apply_patch' },
  { type: 'code_interpreter', container: { type: 'auto' } },
  { type: 'local_shell' },
  { type: 'file_search', vector_store_ids: ['vs_1'] },
  { type: 'web_search' },
  { type: 'web_search_preview', search_context_size: 'low' },
  { type: 'web_search_2025_08_26' },
  { type: 'web_search_preview_2025_03_11' },
  { type: 'computer', display_width: 1024, display_height: 768, environment: 'browser' },
  { type: 'computer_use_preview', display_width: 1024, display_height: 768, environment: 'linux' },
  { type: 'image_generation', quality: 'low' },
  { type: 'tool_search' },
];

const jsonSchema: fc.Arbitrary<TreeObject> = fc.oneof(
  fc.constant({ type: 'object', properties: {}, additionalProperties: true }),
  fc
    .dictionary(identifier, fc.constantFrom<Tree>({ type: 'string' }, { type: 'integer', minimum: 0 }, { type: 'array', items: { type: 'string' } }), {
      maxKeys: 3,
    })
    .map((properties): TreeObject => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false })),
);

type ToolDraft = { tool: TreeObject; programmatic: boolean };

const functionTool: fc.Arbitrary<ToolDraft> = fc
  .record(
    {
      description: fc.option(text, { nil: null }),
      parameters: fc.option(jsonSchema, { nil: null }),
      strict: fc.option(fc.boolean(), { nil: null }),
      output_schema: jsonSchema,
      allowed_callers: fc.option(fc.subarray(['direct', 'programmatic'] as const), { nil: null }),
      defer_loading: fc.boolean(),
    },
    { requiredKeys: [] },
  )
  .map((fields) => ({
    tool: { type: 'function', name: '', ...(fields as TreeObject) },
    programmatic: fields.allowed_callers?.includes('programmatic') ?? false,
  }));

const customTool: fc.Arbitrary<ToolDraft> = fc
  .record(
    { description: text, format: fc.constantFrom<Tree>({ type: 'text' }, { type: 'grammar', syntax: 'lark', definition: 'start: "a"' }) },
    { requiredKeys: [] },
  )
  .map((fields) => ({ tool: { type: 'custom', name: '', ...(fields as TreeObject) }, programmatic: false }));

const namespaceTool: fc.Arbitrary<ToolDraft> = fc.tuple(text, fc.uniqueArray(identifier, { maxLength: 3 })).map(([description, names]) => ({
  tool: { type: 'namespace', name: '', description, tools: names.map((name): Tree => ({ type: 'function', name })) },
  programmatic: false,
}));

const echoedTool: fc.Arbitrary<ToolDraft> = fc.constantFrom(...ECHOED_TOOLS).map((tool) => ({ tool: cloneTree(tool) as TreeObject, programmatic: false }));

/** Tools of every type, names unique, `programmatic_tool_calling` present when a tool needs it. */
export const tools: fc.Arbitrary<Tree[]> = fc
  .tuple(fc.array(fc.oneof(functionTool, functionTool, customTool, namespaceTool, echoedTool), { maxLength: 5 }), fc.boolean(), identifier)
  .map(([drafts, ptc, base]) => {
    // Built-in tools are named by their type: one each.
    const unique = drafts.filter(
      ({ tool }, index) => 'name' in tool || drafts.findIndex((other) => other.tool['type'] === tool['type'] && !('name' in other.tool)) === index,
    );
    const list: Tree[] = unique.map(({ tool }, index) => (tool['name'] === '' ? { ...tool, name: `${base}_${index}` } : tool));
    if (ptc || drafts.some((draft) => draft.programmatic)) list.push({ type: 'programmatic_tool_calling' });
    return list;
  });

export const toolChoice: fc.Arbitrary<Tree> = fc.oneof(
  fc.constantFrom<Tree>('none', 'auto', 'required'),
  identifier.map((name): Tree => ({ type: 'function', name })),
  identifier.map((name): Tree => ({ type: 'custom', name })),
  fc.constant<Tree>({ type: 'programmatic_tool_calling' }),
  fc.constant<Tree>({ type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'x' }] }),
  fc.constant<Tree>({ type: 'mcp', server_label: 'deepwiki' }),
  fc.constantFrom<Tree>({ type: 'web_search_preview' }, { type: 'image_generation' }, { type: 'code_interpreter' }),
);

const inputPart: fc.Arbitrary<Tree> = fc.oneof(
  text.map((value): Tree => ({ type: 'input_text', text: value })),
  fc.constantFrom<Tree>(
    { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
    { type: 'input_image', file_id: 'file_1', detail: 'auto' },
    { type: 'input_file', file_id: 'file_2', filename: 'a.pdf' },
    { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'b.pdf', detail: 'high' },
    { type: 'input_text', text: 'cached', prompt_cache_breakpoint: { mode: 'explicit' } },
  ),
);
const outputPart: fc.Arbitrary<Tree> = fc.oneof(
  text.map((value): Tree => ({ type: 'output_text', text: value, annotations: [] })),
  text.map((value): Tree => ({ type: 'refusal', refusal: value })),
);

/** One conversation segment, given a unique tag for its ids. */
type Segment_ = (tag: string) => Tree[];

const userMessage: fc.Arbitrary<Segment_> = fc
  .record({
    role: fc.constantFrom('user', 'user', 'system', 'developer'),
    content: fc.oneof(text, fc.array(inputPart, { minLength: 1, maxLength: 3 })),
    typed: fc.boolean(),
  })
  .map(({ role, content, typed }) => () => [{ ...(typed ? { type: 'message' } : {}), role, content }]);

const assistantMessage: fc.Arbitrary<Segment_> = fc
  .record({ content: fc.oneof(text, fc.array(outputPart, { minLength: 1, maxLength: 2 })), phase: fc.constantFrom<Tree>('commentary', 'final_answer', null) })
  .map(({ content, phase }) => (tag) => [{ type: 'message', id: `msg_${tag}`, role: 'assistant', status: 'completed', content, phase }]);

const reasoning: fc.Arbitrary<Segment_> = text.map((summary) => (tag) => [
  { type: 'reasoning', id: `rs_${tag}`, summary: [{ type: 'summary_text', text: summary }] },
]);

const directCall: fc.Arbitrary<Segment_> = fc
  .record({
    name: identifier,
    args: fc.constantFrom('{}', '{"q":1}', '{"a":"ü"}'),
    caller: fc.constantFrom('absent', 'direct'),
    outCaller: fc.constantFrom('absent', 'direct'),
    output: fc.oneof(text, fc.array(inputPart, { maxLength: 2 })),
  })
  .map(({ name, args, caller, outCaller, output }) => (tag): Tree[] => [
    {
      type: 'function_call',
      id: `fc_${tag}`,
      call_id: `call_${tag}`,
      name,
      arguments: args,
      status: 'completed',
      ...(caller === 'direct' ? { caller: { type: 'direct' } } : {}),
    },
    { type: 'function_call_output', call_id: `call_${tag}`, output, ...(outCaller === 'direct' ? { caller: { type: 'direct' } } : {}) },
  ]);

const customCall: fc.Arbitrary<Segment_> = fc.record({ name: identifier, input: text, output: text }).map(({ name, input, output }) => (tag): Tree[] => [
  { type: 'custom_tool_call', id: `ctc_${tag}`, call_id: `ccall_${tag}`, name, input },
  { type: 'custom_tool_call_output', call_id: `ccall_${tag}`, output },
]);

/** A direct shell call and apply_patch call with their outputs, as a client loop resends them. */
const shellAndPatch: fc.Arbitrary<Segment_> = fc
  .record({ commands: fc.array(text, { minLength: 1, maxLength: 3 }), stdout: text, path: text, diff: text, failed: fc.boolean() })
  .map(({ commands, stdout, path, diff, failed }) => (tag): Tree[] => [
    {
      type: 'shell_call',
      id: `sh_${tag}`,
      call_id: `shcall_${tag}`,
      action: { commands, timeout_ms: null, max_output_length: 100 },
      status: 'completed',
      environment: { type: 'local' },
    },
    { type: 'shell_call_output', call_id: `shcall_${tag}`, output: commands.map(() => ({ stdout, stderr: '', outcome: { type: 'exit', exit_code: 0 } })) },
    { type: 'apply_patch_call', id: `apc_${tag}`, call_id: `apcall_${tag}`, operation: { type: 'update_file', path, diff }, status: 'completed' },
    { type: 'apply_patch_call_output', call_id: `apcall_${tag}`, status: failed ? 'failed' : 'completed', output: stdout },
  ]);

/** What the emulator emits for server-side tools, resent by a client: direct, so they need nothing more. */
const serverItems: fc.Arbitrary<Segment_> = fc
  .record({ name: identifier, text, failed: fc.boolean() })
  .map(({ name, text: value, failed }) => (tag): Tree[] => [
    { type: 'mcp_list_tools', id: `mcpl_${tag}`, server_label: 'docs', tools: [{ name, input_schema: { type: 'object' }, description: value }], error: null },
    {
      type: 'mcp_call',
      id: `mcp_${tag}`,
      server_label: 'docs',
      name,
      arguments: '{}',
      output: failed ? null : value,
      error: failed ? value : null,
      status: failed ? 'failed' : 'completed',
    },
    { type: 'mcp_approval_request', id: `mcpr_${tag}`, server_label: 'docs', name, arguments: '{}' },
    { type: 'mcp_approval_response', approval_request_id: `mcpr_${tag}`, approve: !failed, ...(failed ? { reason: value } : {}) },
    { type: 'code_interpreter_call', id: `ci_${tag}`, code: value, container_id: 'cntr_1', outputs: [{ type: 'logs', logs: value }], status: 'completed' },
  ]);

/** A tool search and what it loaded, run by the emulator or by the client: the loaded function joins the tools. */
const toolSearch: fc.Arbitrary<Segment_> = fc
  .record({ name: identifier, query: text, execution: fc.constantFrom('server', 'client') })
  .map(({ name, query, execution }) => (tag): Tree[] => [
    { type: 'tool_search_call', id: `tsc_${tag}`, call_id: `tscall_${tag}`, arguments: { query }, execution, status: 'completed' },
    {
      type: 'tool_search_output',
      id: `tso_${tag}`,
      call_id: `tscall_${tag}`,
      execution,
      status: 'completed',
      tools: [{ type: 'function', name, parameters: { type: 'object', properties: {} }, strict: false }],
    },
  ]);

/** A program that has ended (program_output present): its fingerprint is never opened, so any string does. */
const closedProgram: fc.Arbitrary<Segment_> = fc
  .record({
    code: text,
    fingerprint: text,
    calls: fc.array(fc.tuple(identifier, text), { maxLength: 3 }),
    result: text,
    status: fc.constantFrom('completed', 'incomplete'),
  })
  .map(({ code, fingerprint, calls, result, status }) => (tag): Tree[] => {
    const program = `call_prog_${tag}`;
    const caller = { type: 'program', caller_id: program };
    return [
      { type: 'program', id: `prog_${tag}`, call_id: program, code, fingerprint },
      ...calls.map(
        ([name], index): Tree => ({
          type: 'function_call',
          id: `fc_${tag}_${index}`,
          call_id: `call_${tag}_${index}`,
          name,
          arguments: '{}',
          caller,
          status: 'completed',
        }),
      ),
      ...calls.map(([, output], index): Tree => ({ type: 'function_call_output', call_id: `call_${tag}_${index}`, output, caller: { ...caller } })),
      { type: 'program_output', id: `prog_out_${tag}`, call_id: program, result, status },
    ];
  });

const keptItem: fc.Arbitrary<Segment_> = fc
  .tuple(fc.constantFrom(...KEPT_ITEM_TYPES), fc.dictionary(identifier, fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Tree>, { maxKeys: 2 }))
  .map(([type, extra]) => (tag) => [{ ...extra, type, id: `kept_${tag}` }]);

export const conversation: fc.Arbitrary<Tree[]> = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: userMessage },
      assistantMessage,
      reasoning,
      { weight: 2, arbitrary: directCall },
      customCall,
      shellAndPatch,
      serverItems,
      toolSearch,
      { weight: 2, arbitrary: closedProgram },
      keptItem,
    ),
    {
      minLength: 1,
      maxLength: 7,
    },
  )
  .map((segments) => segments.flatMap((segment, index) => segment(String(index))));

const metadata: fc.Arbitrary<Tree> = fc.dictionary(fc.string({ minLength: 1, maxLength: 16 }), fc.string({ maxLength: 40 }), { maxKeys: 4 });

/** A request the API must answer with 200: every parameter of the SDK's create params, in range. */
export const validBody: fc.Arbitrary<TreeObject> = fc.record(
  {
    model: fc.oneof(fc.constant('ptc-emulator'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 })),
    input: fc.oneof(text, conversation),
    instructions: fc.option(text, { nil: null }),
    tools,
    tool_choice: toolChoice,
    parallel_tool_calls: fc.boolean(),
    store: fc.boolean(),
    metadata,
    stream: fc.constant(false),
    max_output_tokens: fc.integer({ min: 1, max: 4096 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    top_logprobs: fc.integer({ min: 0, max: 20 }),
    truncation: fc.constantFrom('auto', 'disabled'),
    user: text,
    safety_identifier: fc.option(text, { nil: null }),
    service_tier: fc.constantFrom('auto', 'default', 'flex', 'scale', 'priority'),
    prompt_cache_key: text,
    prompt_cache_retention: fc.constantFrom('in_memory', '24h'),
    reasoning: fc.record(
      { effort: fc.constantFrom('none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'), summary: fc.constantFrom('auto', 'concise', 'detailed') },
      { requiredKeys: [] },
    ),
    text: fc.record(
      {
        format: fc.constantFrom<Tree>(
          { type: 'text' },
          { type: 'json_object' },
          { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
        ),
        verbosity: fc.constantFrom('low', 'medium', 'high'),
      },
      { requiredKeys: [] },
    ),
    include: fc.array(fc.constantFrom('reasoning.encrypted_content', 'message.output_text.logprobs'), { maxLength: 2 }),
    // A conversation must exist to be named (test/conversations-http.test.ts): none here.
    conversation: fc.constant<Tree>(null),
    context_management: fc.constant<Tree>([{ type: 'compaction' }]),
    prompt: fc.constant<Tree>({ id: 'pmpt_1' }),
  },
  { requiredKeys: ['model'] },
) as fc.Arbitrary<TreeObject>;

export type HeaderList = [string, string][];

/** Knob headers that never fail a request nor make it wait. */
export const validKnobHeaders: fc.Arbitrary<HeaderList> = fc
  .record(
    {
      'x-ptc-final-message': fc.constantFrom('same', 'next'),
      'x-ptc-incomplete': fc.constant('max_output_tokens'),
      'x-ptc-seed': fc.integer().map(String),
      'x-ptc-client-checks': fc.constantFrom('strict', 'lenient'),
      'x-ptc-stream-cut-after': fc.nat(20).map(String),
    },
    { requiredKeys: [] },
  )
  .map((headers) => Object.entries(headers) as HeaderList);

export interface FuzzRequest {
  readonly body: Tree;
  readonly headers: HeaderList;
}

export const validRequest: fc.Arbitrary<FuzzRequest> = fc.record({ body: validBody, headers: validKnobHeaders });

// ---- mutations -------------------------------------------------------------------------------------

const ODD_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  'a.b',
  '[0]',
  'ключ',
  '\uD800',
  'type ',
  'Type',
  'model',
];
const ENUM_KEYS = new Set([
  'type',
  'role',
  'status',
  'truncation',
  'service_tier',
  'effort',
  'summary',
  'verbosity',
  'mode',
  'detail',
  'phase',
  'tool_choice',
  'prompt_cache_retention',
]);
const ID_KEYS = new Set(['call_id', 'caller_id', 'id', 'previous_response_id']);
const NUMERIC_KEYS = new Set(['temperature', 'top_p', 'top_logprobs', 'max_output_tokens']);

const otherValue: fc.Arbitrary<Tree> = fc.constantFrom<Tree>(0, -1, 1.5, '', 'x', true, false, null, [], {}, [1], { a: 1 }, ['x'], 'null', '0');
const oddNumber: fc.Arbitrary<Tree> = fc.oneof(
  fc.constantFrom<Tree>(-1, 0, -0, 1e308, -1e308, 2 ** 53 + 2, -(2 ** 53) - 2, 1.5, 1e-300, 4.9e-324, 21, 2.0000001, 600001),
  fc
    .constantFrom('1e400', '-1e400', '123456789012345678901234567890', '1E+2', '-0.0', '0.0000000000000000000000000001')
    .map((literal) => new RawNumber(literal)),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
/** `{"__proto__": {...}}` as JSON text has it: an own key, not a prototype. */
const PROTO_KEYED: TreeObject = {};
setKey(PROTO_KEYED, '__proto__', { polluted: true });

const oddKeyValue: fc.Arbitrary<{ key: string; value: Tree }> = fc.record({
  key: fc.oneof(fc.constantFrom(...ODD_KEYS), fc.string({ maxLength: 12 })),
  value: fc.oneof(otherValue, fc.constant<Tree>({ prototype: { polluted: true } }), fc.constant<Tree>(PROTO_KEYED)),
});

export type Mutation =
  | { readonly kind: 'delete'; readonly pick: number }
  | { readonly kind: 'retype'; readonly pick: number; readonly value: Tree }
  | { readonly kind: 'unknown-field'; readonly pick: number; readonly key: string; readonly value: Tree }
  | { readonly kind: 'swap'; readonly pick: number; readonly a: number; readonly b: number }
  | { readonly kind: 'duplicate'; readonly pick: number }
  | { readonly kind: 'truncate-string'; readonly pick: number; readonly keep: number }
  | { readonly kind: 'truncate-array'; readonly pick: number; readonly keep: number }
  | { readonly kind: 'enum'; readonly pick: number; readonly variant: string }
  | { readonly kind: 'long-string'; readonly pick: number; readonly unit: string; readonly length: number }
  | { readonly kind: 'id'; readonly pick: number; readonly value: Tree }
  | { readonly kind: 'number'; readonly pick: number; readonly value: Tree }
  | { readonly kind: 'surrogate'; readonly pick: number; readonly at: number; readonly surrogate: string }
  | { readonly kind: 'nest'; readonly pick: number; readonly depth: number; readonly shape: 'array' | 'object'; readonly wrap: boolean }
  | { readonly kind: 'header'; readonly pick: number; readonly name: string; readonly value: string };

const pick = fc.nat();
export const shallowMutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), pick }),
  fc.record({ kind: fc.constant('retype' as const), pick, value: otherValue }),
  fc.record({ kind: fc.constant('unknown-field' as const), pick }).chain((base) => oddKeyValue.map((extra) => ({ ...base, ...extra }))),
  fc.record({ kind: fc.constant('swap' as const), pick, a: fc.nat(), b: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), pick }),
  fc.record({ kind: fc.constant('truncate-string' as const), pick, keep: fc.nat(8) }),
  fc.record({ kind: fc.constant('truncate-array' as const), pick, keep: fc.nat(3) }),
  fc.record({ kind: fc.constant('enum' as const), pick, variant: fc.constantFrom('UPPER', 'suffix', 'empty', 'space', 'other', 'null', 'number') }),
  fc.record({
    kind: fc.constant('long-string' as const),
    pick,
    unit: fc.constantFrom('x', 'ab', '1', 'é', '🧪', ' ', '\u0000', "a'", 'a1 '),
    length: fc.constantFrom(1_000, 50_000, 300_000),
  }),
  fc.record({
    kind: fc.constant('id' as const),
    pick,
    value: fc.oneof(otherValue, fc.constantFrom<Tree>(42, -7, 1e21, '', ' ', 'call_\u0000', 'x'.repeat(5000))),
  }),
  fc.record({ kind: fc.constant('number' as const), pick, value: oddNumber }),
  fc.record({ kind: fc.constant('surrogate' as const), pick, at: fc.nat(), surrogate: fc.constantFrom(...LONE_SURROGATES) }),
  fc.record({
    kind: fc.constant('header' as const),
    pick,
    name: fc.oneof(
      fc.constantFrom('x-ptc-final-message', 'x-ptc-incomplete', 'x-ptc-seed', 'x-ptc-client-checks', 'x-ptc-stream-cut-after'),
      identifier.map((name) => `x-ptc-${name.replaceAll('_', '-')}`),
    ),
    value: fc.constantFrom('', 'NEXT', 'same ', 'max-output-tokens', '1.5', '-1', 'true', '99999999999999999999', 'strict,lenient', 'Strict'),
  }),
);

/** Absurd nesting: a subtree replaced by (or wrapped in) thousands of levels of arrays or objects. */
export const nestMutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constant('nest' as const),
  pick,
  depth: fc.constantFrom(64, 1_000, 10_000, 100_000),
  shape: fc.constantFrom('array' as const, 'object' as const),
  wrap: fc.boolean(),
});

function choose<T>(candidates: readonly T[], index: number): T | undefined {
  return candidates.length === 0 ? undefined : candidates[index % candidates.length];
}

function parentOf(root: Tree, path: readonly Segment[]): Tree | undefined {
  let node: Tree | undefined = root;
  for (const segment of path.slice(0, -1)) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment];
    else if (isObject(node) && typeof segment === 'string') node = node[segment];
    else return undefined;
  }
  return node;
}

function replaceAt(root: Tree, path: readonly Segment[], value: Tree): void {
  const parent = parentOf(root, path);
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') parent[last] = value;
  else if (isObject(parent) && typeof last === 'string') setKey(parent, last, value);
}

function lastKey(node: Node): Segment | undefined {
  return node.path[node.path.length - 1];
}

function enumVariant(value: string, variant: string): Tree {
  switch (variant) {
    case 'UPPER':
      return value.toUpperCase() === value ? `${value}_` : value.toUpperCase();
    case 'suffix':
      return `${value}s`;
    case 'empty':
      return '';
    case 'space':
      return ` ${value}`;
    case 'null':
      return null;
    case 'number':
      return 1;
    default:
      return 'telepathy';
  }
}

/** Applies one mutation in place (body) and returns the headers; a mutation without a target does nothing. */
export function applyMutation(request: { body: Tree; headers: HeaderList }, mutation: Mutation): void {
  const nodes = nodesOf(request.body).filter((node) => node.path.length > 0);
  const { body } = request;
  switch (mutation.kind) {
    case 'delete': {
      const node = choose(
        nodes.filter((candidate) => typeof lastKey(candidate) === 'string'),
        mutation.pick,
      );
      const parent = node && parentOf(body, node.path);
      if (node && isObject(parent)) delete parent[lastKey(node) as string];
      return;
    }
    case 'retype': {
      const node = choose(nodes, mutation.pick);
      if (node) replaceAt(body, node.path, Array.isArray(node.value) && Array.isArray(mutation.value) ? 'not an array' : cloneTree(mutation.value));
      return;
    }
    case 'unknown-field': {
      const objects = nodesOf(body).filter((node) => isObject(node.value));
      const node = choose(objects, mutation.pick);
      if (node && isObject(node.value))
        setKey(node.value, Object.hasOwn(node.value, mutation.key) ? `${mutation.key}_unknown` : mutation.key, cloneTree(mutation.value));
      return;
    }
    case 'swap': {
      const node = choose(
        nodes.filter((candidate) => Array.isArray(candidate.value) && candidate.value.length >= 2),
        mutation.pick,
      );
      if (node && Array.isArray(node.value)) {
        const list = node.value;
        const a = mutation.a % list.length;
        const b = mutation.b % list.length;
        [list[a], list[b]] = [list[b]!, list[a]!];
      }
      return;
    }
    case 'duplicate': {
      const node = choose(
        nodes.filter((candidate) => typeof lastKey(candidate) === 'number'),
        mutation.pick,
      );
      const parent = node && parentOf(body, node.path);
      if (node && Array.isArray(parent)) parent.splice((lastKey(node) as number) + 1, 0, cloneTree(node.value));
      return;
    }
    case 'truncate-string': {
      const node = choose(
        nodes.filter((candidate) => typeof candidate.value === 'string'),
        mutation.pick,
      );
      if (node) replaceAt(body, node.path, (node.value as string).slice(0, Math.min(mutation.keep, Math.max(0, (node.value as string).length - 1))));
      return;
    }
    case 'truncate-array': {
      const node = choose(
        nodes.filter((candidate) => Array.isArray(candidate.value) && candidate.value.length > 0),
        mutation.pick,
      );
      if (node && Array.isArray(node.value)) node.value.length = Math.min(mutation.keep, node.value.length - 1);
      return;
    }
    case 'enum': {
      const node = choose(
        nodes.filter((candidate) => typeof candidate.value === 'string' && ENUM_KEYS.has(String(lastKey(candidate)))),
        mutation.pick,
      );
      if (node) replaceAt(body, node.path, enumVariant(node.value as string, mutation.variant));
      return;
    }
    case 'long-string': {
      const node = choose(
        nodes.filter((candidate) => typeof candidate.value === 'string'),
        mutation.pick,
      );
      if (node) replaceAt(body, node.path, mutation.unit.repeat(Math.ceil(mutation.length / mutation.unit.length)));
      return;
    }
    case 'id': {
      const node = choose(
        nodes.filter((candidate) => ID_KEYS.has(String(lastKey(candidate)))),
        mutation.pick,
      );
      if (node) replaceAt(body, node.path, cloneTree(mutation.value));
      return;
    }
    case 'number': {
      const node = choose(
        nodes.filter((candidate) => typeof candidate.value === 'number' || NUMERIC_KEYS.has(String(lastKey(candidate)))),
        mutation.pick,
      );
      if (node) replaceAt(body, node.path, cloneTree(mutation.value));
      return;
    }
    case 'surrogate': {
      const node = choose(
        nodes.filter((candidate) => typeof candidate.value === 'string'),
        mutation.pick,
      );
      if (node) {
        const value = node.value as string;
        const at = mutation.at % (value.length + 1);
        replaceAt(body, node.path, `${value.slice(0, at)}${mutation.surrogate}${value.slice(at)}`);
      }
      return;
    }
    case 'nest': {
      const node = choose(nodes, mutation.pick);
      if (!node) return;
      const deep = new Deep(mutation.depth, mutation.shape);
      replaceAt(body, node.path, mutation.wrap ? (mutation.shape === 'array' ? [node.value, deep] : { value: node.value, deep }) : deep);
      return;
    }
    case 'header': {
      const existing = request.headers.length > 0 ? mutation.pick % (request.headers.length + 1) : 0;
      if (existing < request.headers.length) request.headers[existing] = [request.headers[existing]![0], mutation.value];
      else request.headers.push([mutation.name, mutation.value]);
      return;
    }
  }
}

export function mutate(request: FuzzRequest, mutations: readonly Mutation[]): { body: Tree; headers: HeaderList } {
  const mutated = { body: cloneTree(request.body), headers: request.headers.map(([name, value]): [string, string] => [name, value]) };
  for (const mutation of mutations) applyMutation(mutated, mutation);
  return mutated;
}

// ---- knob headers: an oracle written from docs/KNOBS.md -----------------------------------------------

type KnobRule = { kind: 'enum'; values: readonly string[] } | { kind: 'int'; min: number; max: number } | { kind: 'bool' };

/** Every `x-ptc-` header the server takes, and the values docs/KNOBS.md gives it. */
export const KNOB_RULES: Readonly<Record<string, KnobRule>> = {
  'x-ptc-final-message': { kind: 'enum', values: ['same', 'next'] },
  'x-ptc-incomplete': { kind: 'enum', values: ['max_output_tokens'] },
  'x-ptc-error-status': { kind: 'int', min: 400, max: 599 },
  'x-ptc-error-times': { kind: 'int', min: 1, max: Number.MAX_SAFE_INTEGER },
  'x-ptc-error-retry-after-ms': { kind: 'int', min: 0, max: 600_000 },
  'x-ptc-error-should-retry': { kind: 'bool' },
  'x-ptc-stream-cut-after': { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER },
  'x-ptc-event-latency-ms': { kind: 'int', min: 0, max: 60_000 },
  'x-ptc-latency-jitter-ms': { kind: 'int', min: 0, max: 60_000 },
  'x-ptc-seed': { kind: 'int', min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER },
  'x-ptc-explore': { kind: 'bool' },
  'x-ptc-delay-ms': { kind: 'int', min: 0, max: 600_000 },
  'x-ptc-client-checks': { kind: 'enum', values: ['strict', 'lenient'] },
};

/** A header value as the knob reads it: an integer, a boolean or a string; undefined when out of range. */
export function knobValue(rule: KnobRule, raw: string): number | boolean | string | undefined {
  switch (rule.kind) {
    case 'enum':
      return rule.values.includes(raw) ? raw : undefined;
    case 'bool':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'int': {
      if (!/^-?[0-9]+$/.test(raw)) return undefined;
      const value = Number(raw);
      return Number.isSafeInteger(value) && value >= rule.min && value <= rule.max ? value : undefined;
    }
  }
}

export interface KnobVerdict {
  /** Headers the server must reject (one of them is named in the 400). */
  readonly invalid: ReadonlySet<string>;
  /** The knobs the headers set, when all are valid. */
  readonly values: Readonly<Record<string, number | boolean | string>>;
}

/** What the server must make of these headers: repeated names are joined with `, ` as HTTP says. */
export function judgeKnobHeaders(headers: readonly (readonly [string, string])[]): KnobVerdict {
  const joined = new Map<string, string>();
  for (const [rawName, rawValue] of headers) {
    const name = rawName.toLowerCase();
    if (!name.startsWith('x-ptc-')) continue;
    const value = rawValue.trim();
    joined.set(name, joined.has(name) ? `${joined.get(name)}, ${value}` : value);
  }
  const invalid = new Set<string>();
  const values: Record<string, number | boolean | string> = {};
  for (const [name, value] of joined) {
    const rule = KNOB_RULES[name];
    const parsed = rule === undefined ? undefined : knobValue(rule, value);
    if (parsed === undefined) invalid.add(name);
    else values[name] = parsed;
  }
  return { invalid, values };
}

// ---- a raw HTTP/1.1 client ----------------------------------------------------------------------------

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawExchange {
  /** Every complete response the server wrote on the connection, interim 1xx excluded. */
  readonly responses: RawResponse[];
  /** Bytes after the last complete response (a response cut off by a close). */
  readonly leftover: string;
  readonly closed: boolean;
}

/** Splits the bytes a server wrote into responses (Content-Length or chunked bodies). */
export function parseResponses(bytes: Buffer): { responses: RawResponse[]; leftover: string } {
  const data = bytes.toString('latin1');
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const [statusLine = '', ...lines] = data.slice(at, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyStart = headEnd + 4;
    let body = '';
    if (status >= 100 && status < 200) {
      at = bodyStart;
      continue;
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (bodyStart + length > data.length) break;
      body = data.slice(bodyStart, bodyStart + length);
      at = bodyStart + length;
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      let complete = false;
      for (;;) {
        const lineEnd = data.indexOf('\r\n', bodyStart);
        if (lineEnd < 0) break;
        const size = parseInt(data.slice(bodyStart, lineEnd), 16);
        if (Number.isNaN(size)) break;
        if (size === 0) {
          const trailerEnd = data.indexOf('\r\n', lineEnd + 2);
          if (trailerEnd < 0) break;
          bodyStart = trailerEnd + 2;
          complete = true;
          break;
        }
        if (lineEnd + 2 + size + 2 > data.length) break;
        body += data.slice(lineEnd + 2, lineEnd + 2 + size);
        bodyStart = lineEnd + 2 + size + 2;
      }
      if (!complete) break;
      at = bodyStart;
    } else {
      // No framing: the body runs to the close.
      body = data.slice(bodyStart);
      at = data.length;
    }
    responses.push({ status, headers, body: Buffer.from(body, 'latin1').toString('utf8') });
  }
  return { responses, leftover: data.slice(at) };
}

export interface RawPlan {
  /** What to write, in order; a number is a pause of that many ms before the next write. */
  readonly writes: readonly (Buffer | string | number)[];
  /** Half-close after writing (the server then has all it will get). */
  readonly end: boolean;
  /** Stop waiting once this many responses arrived (keep-alive connections stay open). */
  readonly expectResponses?: number;
}

/** Writes bytes on a fresh connection and collects what comes back until the server closes (or enough responses came). */
export function rawExchange(port: number, plan: RawPlan): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const received: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      socket.destroy();
      resolve({ ...parseResponses(Buffer.concat(received)), closed });
    };
    const guard = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      const { responses, leftover } = parseResponses(Buffer.concat(received));
      reject(
        new Error(`HANG: the server neither answered nor closed within ${HANG_MS} ms (got ${responses.length} response(s), ${leftover.length} stray bytes)`),
      );
    }, HANG_MS);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      if (plan.expectResponses !== undefined && parseResponses(Buffer.concat(received)).responses.length >= plan.expectResponses) finish(false);
    });
    socket.on('close', () => finish(true));
    // A server that closes while we still write gives EPIPE/ECONNRESET: the close is the answer.
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      void (async () => {
        for (const write of plan.writes) {
          if (socket.destroyed) return;
          if (typeof write === 'number') await new Promise((wait) => setTimeout(wait, write));
          else socket.write(write);
        }
        if (plan.end && !socket.destroyed) socket.end();
      })();
    });
  });
}
