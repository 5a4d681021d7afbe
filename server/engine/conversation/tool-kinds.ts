import type { ProgramTool } from '../../../runtime/index.ts';

/**
 * Every kind of tool a program or the model can call, declared once: the items its calls and
 * their answers travel in, their id prefixes, who answers them, and how messages name them.
 * Everything else reads its kind's item types and prefixes from here (schemas/ holds the items'
 * shapes). Adding a kind: a row here, its item shapes in schemas/items.ts, and the `switch` arms
 * the compiler then asks for (see docs/CONTRIBUTING.md).
 */

/** An item of a kind: its `type`, and the prefix of the ids the emulator gives it (`fc_…`). */
interface KindItem {
  readonly type: string;
  readonly idPrefix: string;
}

interface KindDefinition {
  /**
   * Who answers a call: the client (the response ends waiting for its output item), or the
   * emulator (the call's item carries the answer, and the program runs on).
   */
  readonly owner: 'client' | 'emulator';
  /** The item a call is. */
  readonly call: KindItem;
  /** The item that answers it, when that is an item of its own: the client's, or the hosted shell's. */
  readonly output?: KindItem;
  /**
   * What identifies a program's call and seals it (see sealCallId): a `call_id` (`call_…`) for
   * the kinds whose items have one, else the call item's own id.
   */
  readonly sealedPrefix: string;
  /** How messages name a call: "function call call_…". */
  readonly label: string;
  /** What a call takes: one string sent as it is (a custom tool's input), or a JSON object. */
  readonly input: 'text' | 'json';
}

export const TOOL_KINDS = {
  function: {
    owner: 'client',
    call: { type: 'function_call', idPrefix: 'fc' },
    output: { type: 'function_call_output', idPrefix: 'fco' },
    sealedPrefix: 'call',
    label: 'function call',
    input: 'json',
  },
  custom: {
    owner: 'client',
    call: { type: 'custom_tool_call', idPrefix: 'ctc' },
    output: { type: 'custom_tool_call_output', idPrefix: 'ctco' },
    sealedPrefix: 'call',
    label: 'custom tool call',
    input: 'text',
  },
  /** The local shell: the client runs the commands. */
  shell: {
    owner: 'client',
    call: { type: 'shell_call', idPrefix: 'sh' },
    output: { type: 'shell_call_output', idPrefix: 'sho' },
    sealedPrefix: 'call',
    label: 'shell call',
    input: 'json',
  },
  apply_patch: {
    owner: 'client',
    call: { type: 'apply_patch_call', idPrefix: 'apc' },
    output: { type: 'apply_patch_call_output', idPrefix: 'apco' },
    sealedPrefix: 'call',
    label: 'apply_patch call',
    input: 'json',
  },
  /** The hosted shell: the same items as the local one's, both made by the emulator (the output's id seals what it carries). */
  hosted_shell: {
    owner: 'emulator',
    call: { type: 'shell_call', idPrefix: 'sh' },
    output: { type: 'shell_call_output', idPrefix: 'sho' },
    sealedPrefix: 'call',
    label: 'shell call',
    input: 'json',
  },
  code_interpreter: {
    owner: 'emulator',
    call: { type: 'code_interpreter_call', idPrefix: 'ci' },
    sealedPrefix: 'ci',
    label: 'code_interpreter_call',
    input: 'json',
  },
  /** A tool of an MCP server; a call its server's `require_approval` holds waits on the client's approval (MCP_APPROVAL). */
  mcp: {
    owner: 'emulator',
    call: { type: 'mcp_call', idPrefix: 'mcp' },
    sealedPrefix: 'mcp',
    label: 'mcp_call',
    input: 'json',
  },
} as const satisfies Record<string, KindDefinition>;

/** An MCP call held for approval, and the client's answer to it. */
export const MCP_APPROVAL = {
  /** Sealed under its own id, which seals its batch too. */
  request: { type: 'mcp_approval_request', idPrefix: 'mcpr' },
  response: { type: 'mcp_approval_response', idPrefix: 'mcpar' },
} as const satisfies Record<string, KindItem>;

export type ToolKind = keyof typeof TOOL_KINDS;
type Definition<Kind extends ToolKind> = (typeof TOOL_KINDS)[Kind];
/** The kinds whose calls go to the client. */
export type ClientToolKind = { [Kind in ToolKind]: Definition<Kind>['owner'] extends 'client' ? Kind : never }[ToolKind];

export function isClientKind(kind: ToolKind): kind is ClientToolKind {
  return TOOL_KINDS[kind].owner === 'client';
}

export function isToolKind(name: string): name is ToolKind {
  return Object.hasOwn(TOOL_KINDS, name);
}

/**
 * How a program tool carries its kind through the runtime, which seals it without reading it:
 * as its tag (none for a function, the default kind), with what its calls take.
 */
export function programToolKind(kind: ToolKind): { readonly tag?: ToolKind; readonly input?: 'text' } {
  return { ...(kind === 'function' ? {} : { tag: kind }), ...(TOOL_KINDS[kind].input === 'text' ? { input: 'text' as const } : {}) };
}

/**
 * The kind of a program tool, read back from its tag (a paused program's tools come from its
 * fingerprint); undefined when the tag names no kind, or a kind whose calls take other input.
 */
export function kindOfProgramTool(tool: Pick<ProgramTool, 'tag' | 'input'>): ToolKind | undefined {
  const kind = tool.tag ?? 'function';
  if (!isToolKind(kind)) return undefined;
  return TOOL_KINDS[kind].input === (tool.input ?? 'json') ? kind : undefined;
}
