import { compileToolSchemas, SchemaDeadlineError, SchemaTooComplexError, toolId, type ProgramTool } from '../../../runtime/index.ts';
import type { McpListToolsItem } from '../../../schemas/items.ts';
import type {
  AllowedCaller,
  ApplyPatchTool,
  CodeInterpreterTool,
  CustomTool,
  FunctionTool,
  McpTool,
  NamespaceFunction,
  NamespaceTool,
  ShellTool,
  Tool,
  ToolSearchTool,
} from '../../../schemas/tools.ts';
import { ApiError } from '../../platform/api-error.ts';
import { APPLY_PATCH_PROGRAM_TOOL, CODE_INTERPRETER_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from './local-tools.ts';
import { mcpToolAllowed } from './mcp-policy.ts';
import { strictSchemaLimitExceeded } from './strict-schema-limits.ts';
import { programToolKind, type ToolKind } from './tool-kinds.ts';

/**
 * A tool someone can call: a function or custom tool (at the top level or inside a namespace),
 * the shell, apply_patch, code_interpreter, or a tool of an MCP server (once listed).
 */
export interface CallableTool {
  /** `name`, or `namespace.name` (an MCP tool: `server_label.name`): how calls and the stand-in name it. */
  readonly id: string;
  readonly name: string;
  readonly namespace?: string;
  readonly kind: ToolKind;
  readonly callers: readonly AllowedCaller[];
  readonly definition: FunctionTool | NamespaceFunction | CustomTool | ShellTool | ApplyPatchTool | CodeInterpreterTool | McpTool;
  /** Where it is in the request: `tools[2]`, `tools[3].tools[0]`. */
  readonly param: string;
  /** An MCP tool's annotations from its server's listing (`readOnlyHint` matters to the policies). */
  readonly annotations?: unknown;
  /** An MCP tool's description and input schema from its server's listing. */
  readonly listed?: { readonly description?: string; readonly inputSchema: unknown };
}

/** An MCP server of the request, by `server_label`. */
export interface McpServer {
  readonly label: string;
  readonly definition: McpTool;
  readonly callers: readonly AllowedCaller[];
  readonly param: string;
}

/** A tool as the stand-in model sees it. */
export interface ToolSummary {
  readonly name: string;
  readonly type: ToolKind;
  readonly callers: readonly AllowedCaller[];
  /** What the request (or an MCP server's listing) says the tool is for. */
  readonly description?: string;
  /** A function's `parameters`, or an MCP tool's `input_schema`: JSON Schema, as sent. */
  readonly parameters?: unknown;
  /** A function's `output_schema`, as sent. */
  readonly outputSchema?: unknown;
  /** A custom tool's grammar, as sent. */
  readonly grammar?: { readonly syntax: string; readonly definition: string };
}

/** The request's tools, read once: who may call what, and what a program gets on `tools`. */
export interface ToolSet {
  readonly programmaticToolCalling: boolean;
  /** Every callable tool by id, in request order (an MCP server's once its listing is known). */
  readonly tools: ReadonlyMap<string, CallableTool>;
  /** The tools a program may call, in request order. */
  readonly programTools: readonly ProgramTool[];
  readonly summaries: readonly ToolSummary[];
  readonly mcpServers: ReadonlyMap<string, McpServer>;
  /** The hosted shell's container, when the request has the hosted shell. */
  readonly hostedShellContainer?: string;
  /** code_interpreter's container, when the request has it. */
  readonly codeInterpreterContainer?: string;
  /** The request's tool_search tool, when it has one. */
  readonly toolSearch?: ToolSearchTool;
  /** Tools marked `defer_loading: true` that no tool search has loaded yet: what a search looks through. */
  readonly deferred: readonly Tool[];
  /** The schemas programs would check with, in request order, for checkToolSchemas. */
  readonly schemas: readonly SchemaUse[];
}

/** The container id items carry when the request lets the emulator pick one (`container_auto`). */
export const EMULATED_CONTAINER_ID = 'cntr_ptc_emulated';

export function callersOf(tool: { allowed_callers?: readonly AllowedCaller[] | null | undefined }): readonly AllowedCaller[] {
  return tool.allowed_callers && tool.allowed_callers.length > 0 ? tool.allowed_callers : ['direct'];
}

/**
 * The param of a part of a tool: `tools[2].parameters`, `input[4].tools[0].tools[1]`. A tool
 * of a stored response is named by `previous_response_id` alone: its parts are not the request's.
 */
function paramWithin(param: string, path: string): string {
  return param === 'previous_response_id' ? param : `${param}.${path}`;
}

/** A schema a program would check with, and where the request has it: see checkToolSchemas. */
export interface SchemaUse {
  readonly schema: Readonly<Record<string, unknown>>;
  readonly toolName: string;
  readonly param: string;
}

/** A function's strict `parameters` and its `output_schema`, the schemas a program would use. */
function schemasOf(definition: FunctionTool | NamespaceFunction, id: string, param: string): SchemaUse[] {
  return [
    ...(definition.parameters != null && definition.strict !== false
      ? [{ schema: definition.parameters, toolName: id, param: paramWithin(param, 'parameters') }]
      : []),
    ...(definition.output_schema != null ? [{ schema: definition.output_schema, toolName: id, param: paramWithin(param, 'output_schema') }] : []),
  ];
}

export interface SchemaBounds {
  /** PTC_MAX_SCHEMA_BYTES: the JSON of all of them together. */
  readonly maxBytes: number;
  /** PTC_SCHEMA_COMPILE_TIMEOUT_MS: compiling the ones not compiled before. */
  readonly compileTimeoutMs: number;
}

/**
 * Compiles every schema a program of this request would check with, so that one ajv cannot
 * compile is a 400 naming it. Their size is bounded first, then each must be within the hosted
 * API's limits for strict schemas (one linear walk each); the compiling runs in the schema
 * thread (ajv's cost grows faster than a schema), within a deadline.
 */
export async function checkToolSchemas(toolSet: ToolSet, bounds: SchemaBounds): Promise<void> {
  let bytes = 0;
  for (const use of toolSet.schemas) {
    bytes += Buffer.byteLength(JSON.stringify(use.schema), 'utf8');
    if (bytes > bounds.maxBytes) {
      throw new ApiError(
        'schema_too_large',
        `The schemas of this request's tools come to more than ${bounds.maxBytes} bytes (PTC_MAX_SCHEMA_BYTES) by the one of tool '${use.toolName}' at ${use.param}.`,
        use.param,
      );
    }
  }
  // The hosted API's limits hold for every strict schema, a function's that only the model calls too.
  const directOnly = [...toolSet.tools.values()].flatMap((tool) =>
    tool.definition.type === 'function' && !tool.callers.includes('programmatic') ? schemasOf(tool.definition, tool.id, tool.param) : [],
  );
  for (const use of [...toolSet.schemas, ...directOnly]) {
    const exceeded = strictSchemaLimitExceeded(use.schema);
    if (exceeded) throw new ApiError('invalid_function_parameters', `Invalid schema for tool '${use.toolName}' at ${use.param}: ${exceeded}.`, use.param);
  }
  const results = await compileToolSchemas(
    toolSet.schemas.map((use) => use.schema),
    bounds.compileTimeoutMs,
  );
  const failed = results.findIndex((result) => !('source' in result));
  if (failed < 0) return;
  const { toolName, param } = toolSet.schemas[failed]!;
  const error = results[failed] as Error;
  if (error instanceof SchemaDeadlineError) {
    throw new ApiError(
      'schema_too_complex',
      `ajv could not compile the schemas of this request's tools within ${error.measure} (PTC_SCHEMA_COMPILE_TIMEOUT_MS), from the one of tool '${toolName}' at ${param} on.`,
      param,
    );
  }
  if (error instanceof SchemaTooComplexError)
    throw new ApiError('schema_too_complex', `The schema of tool '${toolName}' at ${param} is too complex: ${error.message}.`, param);
  throw new ApiError('invalid_function_parameters', `Invalid schema for tool '${toolName}' at ${param}: ${error.message}.`, param);
}

/**
 * The tool as a program gets it, tagged with its kind (which the runtime seals and the server
 * reads back on a resume: kindOfProgramTool). A function's `parameters` are checked before its
 * calls leave the isolate unless `strict` is false (it defaults to true in the Responses API);
 * its `output_schema` makes the program receive the parsed, checked output.
 */
function programTool(tool: CallableTool): ProgramTool {
  return { ...programToolShape(tool), ...programToolKind(tool.kind) };
}

function programToolShape(tool: CallableTool): ProgramTool {
  const { definition } = tool;
  switch (tool.kind) {
    case 'shell':
    case 'hosted_shell':
      return SHELL_PROGRAM_TOOL;
    case 'apply_patch':
      return APPLY_PATCH_PROGRAM_TOOL;
    case 'code_interpreter':
      return CODE_INTERPRETER_PROGRAM_TOOL;
    case 'mcp':
      return { name: tool.name, namespace: tool.namespace!, parseOutputAsJson: false };
    case 'custom':
      return { name: tool.name, ...(tool.namespace === undefined ? {} : { namespace: tool.namespace }), parseOutputAsJson: false };
    case 'function': {
      if (definition.type !== 'function') throw new TypeError('a function tool without its definition');
      const strictParameters = definition.parameters != null && definition.strict !== false ? definition.parameters : undefined;
      const outputSchema = definition.output_schema ?? undefined;
      return {
        name: tool.name,
        ...(tool.namespace === undefined ? {} : { namespace: tool.namespace }),
        parseOutputAsJson: outputSchema !== undefined,
        // Compilable: checked with the request (checkToolSchemas), or as a search loaded it.
        ...(strictParameters ? { parameters: strictParameters } : {}),
        ...(outputSchema ? { outputSchema } : {}),
      };
    }
  }
}

function containerOf(environment: ShellTool['environment'] | CodeInterpreterTool['container']): string {
  if (typeof environment === 'string') return environment;
  return environment?.type === 'container_reference' ? String(environment['container_id']) : EMULATED_CONTAINER_ID;
}

/** Builds the parts of a ToolSet that depend on its callable tools. */
function completed(base: Omit<ToolSet, 'tools' | 'programTools' | 'summaries'>, callable: ReadonlyMap<string, CallableTool>): ToolSet {
  const all = [...callable.values()];
  return {
    ...base,
    tools: callable,
    programTools: base.programmaticToolCalling ? all.filter((tool) => tool.callers.includes('programmatic')).map(programTool) : [],
    summaries: all.map(summary),
  };
}

function summary(tool: CallableTool): ToolSummary {
  const base = { name: tool.id, type: tool.kind, callers: tool.callers };
  const { definition } = tool;
  if (tool.listed) {
    return { ...base, ...(tool.listed.description ? { description: tool.listed.description } : {}), parameters: tool.listed.inputSchema };
  }
  if (definition.type === 'function') {
    return {
      ...base,
      ...(definition.description ? { description: definition.description } : {}),
      ...(definition.parameters != null ? { parameters: definition.parameters } : {}),
      ...(definition.output_schema != null ? { outputSchema: definition.output_schema } : {}),
    };
  }
  if (definition.type === 'custom') {
    const grammar = definition.format?.type === 'grammar' ? { syntax: definition.format.syntax, definition: definition.format.definition } : undefined;
    return { ...base, ...(definition.description ? { description: definition.description } : {}), ...(grammar ? { grammar } : {}) };
  }
  return base;
}

/** The names a tool definition loads: a tool's name, a namespace's `namespace.member`s, an MCP server's label, a built-in's type. */
function loadedNames(tool: Tool): string[] {
  if (tool.type === 'namespace') return tool.tools.map((member) => toolId({ name: member.name, namespace: tool.name }));
  if (tool.type === 'mcp') return [tool.server_label];
  if (tool.type === 'shell' || tool.type === 'apply_patch' || tool.type === 'code_interpreter') return [tool.type];
  return 'name' in tool && typeof tool.name === 'string' ? [tool.name] : [];
}

function isDeferred(tool: object): boolean {
  return (tool as { defer_loading?: unknown }).defer_loading === true;
}

/** A tool definition a tool search loaded, and where the conversation has it (`input[4].tools[0]`). */
export interface LoadedTool {
  readonly tool: Tool;
  readonly param: string;
}

/** A namespace member of the conversation, where it is, and whether the conversation rather than this request brought it. */
interface PlacedMember {
  readonly member: NamespaceTool['tools'][number];
  readonly param: string;
  readonly loaded: boolean;
}

/** A tool of the conversation and where it is: `tools[i]` of the request, or in a tool_search_output. */
interface PlacedTool {
  readonly tool: Tool;
  readonly param: string;
  /** A search loaded it: the request does not have it, so the request's own rules (programs enabled) do not bind it. */
  readonly loaded: boolean;
  /** A namespace's members as the conversation has them: deferred ones set aside, loaded ones joined. */
  readonly members?: PlacedMember[];
}

/**
 * The request's tools as the conversation has them: a tool marked `defer_loading: true` counts
 * only once a tool search loaded it (its definition is in a `tool_search_output`), and what a
 * client-executed search returned that the request lacks joins: a whole tool, or members of a
 * namespace, merged into the namespace of that name. The rest is set aside for searches.
 */
function effectiveTools(tools: readonly Tool[], loaded: readonly LoadedTool[]): { tools: PlacedTool[]; deferred: Tool[] } {
  const loadedSet = new Set(loaded.flatMap(({ tool }) => loadedNames(tool)));
  const present = new Set<string>();
  const effective: PlacedTool[] = [];
  const namespaces = new Map<string, PlacedTool>();
  const deferred: Tool[] = [];
  for (const [index, tool] of tools.entries()) {
    const param = `tools[${index}]`;
    for (const name of loadedNames(tool)) present.add(name);
    if (tool.type === 'namespace') {
      present.add(tool.name);
      // Members keep their places: errors name `tools[i].tools[j]` of the request.
      const members: PlacedMember[] = [];
      const deferredMembers: NamespaceTool['tools'] = [];
      for (const [inner, member] of tool.tools.entries()) {
        if (isDeferred(member) && !loadedSet.has(toolId({ name: member.name, namespace: tool.name }))) deferredMembers.push(member);
        else members.push({ member, param: `${param}.tools[${inner}]`, loaded: false });
      }
      if (deferredMembers.length > 0) deferred.push({ ...tool, tools: deferredMembers });
      const placed: PlacedTool = { tool, param, loaded: false, members };
      namespaces.set(tool.name, placed);
      effective.push(placed);
    } else if (isDeferred(tool) && !loadedNames(tool).some((name) => loadedSet.has(name))) {
      deferred.push(tool);
    } else {
      effective.push({ tool, param, loaded: false });
    }
  }
  for (const { tool, param } of loaded) {
    if (tool.type === 'namespace') {
      let target = namespaces.get(tool.name);
      if (!target) {
        if (present.has(tool.name)) continue;
        target = { tool: { ...tool, tools: [] }, param, loaded: true, members: [] };
        namespaces.set(tool.name, target);
        effective.push(target);
        present.add(tool.name);
      }
      for (const [inner, member] of tool.tools.entries()) {
        const id = toolId({ name: member.name, namespace: tool.name });
        if (present.has(id)) continue;
        target.members!.push({ member, param: paramWithin(param, `tools[${inner}]`), loaded: true });
        present.add(id);
      }
    } else if (!loadedNames(tool).some((name) => present.has(name))) {
      effective.push({ tool, param, loaded: true });
      for (const name of loadedNames(tool)) present.add(name);
    }
  }
  return { tools: effective, deferred };
}

/**
 * Reads the request's tools: every name unique (at the top level, and inside each namespace),
 * `allowed_callers: ["programmatic"]` only with `{type: "programmatic_tool_calling"}`; all
 * checked over every tool of the request, deferred ones included, before anything runs. The
 * schemas a program would use are collected in `schemas`, for checkToolSchemas to compile. Tools marked `defer_loading: true` count once a tool
 * search loaded them (`loaded`, from the conversation's tool_search_output items). MCP servers'
 * tools join once their listing is known (withMcpListings).
 */
export function readToolSet(requestTools: readonly Tool[] = [], loaded: readonly LoadedTool[] = []): ToolSet {
  const programmaticToolCalling = requestTools.some((tool) => tool.type === 'programmatic_tool_calling');
  const schemas = checkRequestTools(requestTools, programmaticToolCalling);
  const { tools, deferred } = effectiveTools(requestTools, loaded);
  const callable = new Map<string, CallableTool>();
  const mcpServers = new Map<string, McpServer>();
  let hostedShellContainer: string | undefined;
  let codeInterpreterContainer: string | undefined;
  let toolSearch: ToolSearchTool | undefined;

  /**
   * Who may call a tool. One a search loaded may allow programs when this request does not
   * enable them: it then stays out of programs, as the request's own tools were checked already.
   */
  const callersIn = (definition: { allowed_callers?: readonly AllowedCaller[] | null | undefined }, loadedHere: boolean): readonly AllowedCaller[] => {
    const callers = callersOf(definition);
    return loadedHere && !programmaticToolCalling ? callers.filter((caller) => caller !== 'programmatic') : callers;
  };
  const add = (definition: CallableTool['definition'], kind: ToolKind, param: string, loadedHere: boolean, namespace?: string): void => {
    // The built-in tools are named by their type.
    const named = 'name' in definition && typeof definition.name === 'string';
    const name = named ? String(definition.name) : definition.type;
    const id = toolId({ name, namespace });
    // A loaded function programs may call is checked as the request's own are, programs enabled
    // or not: a schema ajv cannot compile is refused where it came in, not when programs come on.
    if (loadedHere && definition.type === 'function' && callersOf(definition).includes('programmatic')) schemas.push(...schemasOf(definition, id, param));
    callable.set(id, { id, name, ...(namespace === undefined ? {} : { namespace }), kind, callers: callersIn(definition, loadedHere), definition, param });
  };

  for (const { tool, param, loaded: loadedHere, members } of tools) {
    switch (tool.type) {
      case 'function':
      case 'custom':
      case 'apply_patch':
        add(tool, tool.type, param, loadedHere);
        break;
      case 'shell': {
        const hosted = tool.environment != null && tool.environment.type !== 'local';
        if (hosted) hostedShellContainer = containerOf(tool.environment);
        add(tool, hosted ? 'hosted_shell' : 'shell', param, loadedHere);
        break;
      }
      case 'code_interpreter':
        codeInterpreterContainer = containerOf(tool.container);
        add(tool, 'code_interpreter', param, loadedHere);
        break;
      case 'namespace':
        for (const { member, param: memberParam, loaded: memberLoaded } of members ?? []) add(member, member.type, memberParam, memberLoaded, tool.name);
        break;
      case 'mcp':
        mcpServers.set(tool.server_label, { label: tool.server_label, definition: tool, callers: callersIn(tool, loadedHere), param });
        break;
      case 'tool_search':
        toolSearch = tool;
        break;
    }
  }
  return completed(
    {
      programmaticToolCalling,
      mcpServers,
      ...(hostedShellContainer === undefined ? {} : { hostedShellContainer }),
      ...(codeInterpreterContainer === undefined ? {} : { codeInterpreterContainer }),
      ...(toolSearch === undefined ? {} : { toolSearch }),
      deferred,
      schemas,
    },
    callable,
  );
}

/**
 * The request's own rules, over every tool it has, deferred ones included: one name each (a 400
 * naming both places) and the programmatic caller only with programs enabled. Returns the
 * schemas a program would use.
 */
function checkRequestTools(tools: readonly Tool[], programmaticToolCalling: boolean): SchemaUse[] {
  const schemas: SchemaUse[] = [];
  const places = new Map<string, string>();
  const claim = (name: string, param: string, field: string): void => {
    const earlier = places.get(name);
    if (earlier !== undefined) {
      throw new ApiError('duplicate_tool_name', `${param} and ${earlier} are both named '${name}'; tool names must be unique.`, `${param}.${field}`);
    }
    places.set(name, param);
  };
  /** `id` names a namespace member in schema errors as programs reach it: `crm.add_note`. */
  const checkCallers = (definition: object, name: string, param: string, id = name): void => {
    if (!callersOf(definition as { allowed_callers?: AllowedCaller[] }).includes('programmatic')) return;
    if (!programmaticToolCalling) {
      throw new ApiError(
        'programmatic_tool_calling_not_enabled',
        `${param} ('${name}') allows the programmatic caller, but tools has no {"type": "programmatic_tool_calling"} entry to enable programs.`,
        `${param}.allowed_callers`,
      );
    }
    if ('type' in definition && definition.type === 'function') schemas.push(...schemasOf(definition as FunctionTool, id, param));
  };
  for (const [index, tool] of tools.entries()) {
    const param = `tools[${index}]`;
    if (tool.type === 'mcp') {
      claim(tool.server_label, param, 'server_label');
      checkCallers(tool, tool.server_label, param);
    } else if ('name' in tool && typeof tool.name === 'string') {
      claim(tool.name, param, 'name');
      if (tool.type !== 'namespace') checkCallers(tool, tool.name, param);
    } else if (tool.type === 'shell' || tool.type === 'apply_patch' || tool.type === 'code_interpreter') {
      claim(tool.type, param, 'type');
      checkCallers(tool, tool.type, param);
    }
    if (tool.type === 'namespace') {
      for (const [inner, member] of tool.tools.entries()) {
        const id = toolId({ name: member.name, namespace: tool.name });
        claim(id, `${param}.tools[${inner}]`, 'name');
        checkCallers(member, member.name, `${param}.tools[${inner}]`, id);
      }
    }
  }
  return schemas;
}

/** The tool set with each MCP server's listed tools (those its `allowed_tools` lets through) added. */
export function withMcpListings(toolSet: ToolSet, listings: ReadonlyMap<string, McpListToolsItem>): ToolSet {
  const callable = new Map(toolSet.tools);
  for (const server of toolSet.mcpServers.values()) {
    const listing = listings.get(server.label);
    if (!listing || listing.error) continue;
    for (const tool of listing.tools) {
      if (!mcpToolAllowed(server.definition, tool)) continue;
      const id = toolId({ name: tool.name, namespace: server.label });
      callable.set(id, {
        id,
        name: tool.name,
        namespace: server.label,
        kind: 'mcp',
        callers: server.callers,
        definition: server.definition,
        param: server.param,
        ...(tool.annotations == null ? {} : { annotations: tool.annotations }),
        listed: { ...(tool.description ? { description: tool.description } : {}), inputSchema: tool.input_schema },
      });
    }
  }
  const { tools: _tools, programTools: _programTools, summaries: _summaries, ...base } = toolSet;
  return completed(base, callable);
}
