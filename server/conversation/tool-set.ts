import { toolId, type ProgramTool } from '../../runtime/program-tool.ts';
import { compileToolSchema, ToolSchemaError } from '../../runtime/tool-schemas.ts';
import type { AllowedCaller, ApplyPatchTool, CustomTool, FunctionTool, NamespaceFunction, ShellTool, Tool } from '../../schemas/tools.ts';
import { ApiError } from '../api-error.ts';
import { APPLY_PATCH_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from './local-tools.ts';

/** What a call to a tool becomes: a `function_call`, `custom_tool_call`, `shell_call` or `apply_patch_call`. */
export type ToolKind = 'function' | 'custom' | 'shell' | 'apply_patch';

/**
 * A tool someone can call: a function or custom tool (at the top level or inside a namespace),
 * the local shell, or apply_patch.
 */
export interface CallableTool {
  /** `name`, or `namespace.name`: how calls and the stand-in name it. */
  readonly id: string;
  readonly name: string;
  readonly namespace?: string;
  readonly kind: ToolKind;
  readonly callers: readonly AllowedCaller[];
  readonly definition: FunctionTool | NamespaceFunction | CustomTool | ShellTool | ApplyPatchTool;
  /** Where it is in the request: `tools[2]`, `tools[3].tools[0]`. */
  readonly param: string;
}

/** A tool as the stand-in model sees it. */
export interface ToolSummary {
  readonly name: string;
  readonly type: ToolKind;
  readonly callers: readonly AllowedCaller[];
}

/** The request's tools, read once: who may call what, and what a program gets on `tools`. */
export interface ToolSet {
  readonly programmaticToolCalling: boolean;
  /** Every callable tool by id, in request order. */
  readonly tools: ReadonlyMap<string, CallableTool>;
  /** The tools a program may call, in request order. */
  readonly programTools: readonly ProgramTool[];
  readonly summaries: readonly ToolSummary[];
}

export function callersOf(tool: { allowed_callers?: readonly AllowedCaller[] | null | undefined }): readonly AllowedCaller[] {
  return tool.allowed_callers && tool.allowed_callers.length > 0 ? tool.allowed_callers : ['direct'];
}

/** Compiles a tool's schema now, so that a schema ajv cannot compile is a 400 naming it. */
function checkedSchema(schema: Readonly<Record<string, unknown>>, toolName: string, param: string): Readonly<Record<string, unknown>> {
  try {
    compileToolSchema(schema);
  } catch (error) {
    if (!(error instanceof ToolSchemaError)) throw error;
    throw new ApiError('invalid_function_parameters', `Invalid schema for tool '${toolName}' at ${param}: ${error.message}.`, param);
  }
  return schema;
}

/**
 * The tool as a program gets it. A function's `parameters` are checked before its calls leave
 * the isolate unless `strict` is false (it defaults to true in the Responses API); its
 * `output_schema` makes the program receive the parsed, checked output.
 */
function programTool(tool: CallableTool, param: string): ProgramTool {
  const { definition } = tool;
  if (definition.type === 'shell') return SHELL_PROGRAM_TOOL;
  if (definition.type === 'apply_patch') return APPLY_PATCH_PROGRAM_TOOL;
  const strictParameters = definition.type === 'function' && definition.parameters != null && definition.strict !== false ? definition.parameters : undefined;
  const outputSchema = definition.type === 'function' && definition.output_schema != null ? definition.output_schema : undefined;
  return {
    name: tool.name,
    ...(tool.namespace === undefined ? {} : { namespace: tool.namespace }),
    ...(tool.kind === 'custom' ? { kind: 'custom' as const } : {}),
    parseOutputAsJson: outputSchema !== undefined,
    ...(strictParameters ? { parameters: checkedSchema(strictParameters, tool.id, `${param}.parameters`) } : {}),
    ...(outputSchema ? { outputSchema: checkedSchema(outputSchema, tool.id, `${param}.output_schema`) } : {}),
  };
}

/**
 * Reads the request's tools: every name unique (at the top level, and inside each namespace),
 * `allowed_callers: ["programmatic"]` only with `{type: "programmatic_tool_calling"}`.
 */
export function readToolSet(tools: readonly Tool[] = []): ToolSet {
  const programmaticToolCalling = tools.some((tool) => tool.type === 'programmatic_tool_calling');
  const callable = new Map<string, CallableTool>();
  const places = new Map<string, string>();

  /** `field` is where the tool's name is: `name`, or `type` for the built-in tools named by it. */
  const claimName = (id: string, param: string, field: 'name' | 'type' = 'name'): void => {
    const earlier = places.get(id);
    if (earlier !== undefined) {
      throw new ApiError('duplicate_tool_name', `${param} and ${earlier} are both named '${id}'; tool names must be unique.`, `${param}.${field}`);
    }
    places.set(id, param);
  };
  const add = (definition: CallableTool['definition'], param: string, namespace?: string): void => {
    const callers = callersOf(definition);
    // The built-in tools are named by their type.
    const name = definition.type === 'shell' || definition.type === 'apply_patch' ? definition.type : definition.name;
    if (callers.includes('programmatic') && !programmaticToolCalling) {
      throw new ApiError(
        'programmatic_tool_calling_not_enabled',
        `${param} ('${name}') allows the programmatic caller, but tools has no {"type": "programmatic_tool_calling"} entry to enable programs.`,
        `${param}.allowed_callers`,
      );
    }
    const id = toolId({ name, namespace });
    claimName(id, param, 'name' in definition ? 'name' : 'type');
    callable.set(id, { id, name, ...(namespace === undefined ? {} : { namespace }), kind: definition.type, callers, definition, param });
  };

  for (const [index, tool] of tools.entries()) {
    const param = `tools[${index}]`;
    if (tool.type === 'function' || tool.type === 'custom' || tool.type === 'apply_patch') add(tool, param);
    else if (tool.type === 'shell' && (tool.environment == null || tool.environment.type === 'local')) add(tool, param);
    else if (tool.type === 'namespace') {
      claimName(tool.name, param);
      for (const [inner, member] of tool.tools.entries()) add(member, `${param}.tools[${inner}]`, tool.name);
    } else if ('name' in tool && typeof tool.name === 'string') claimName(tool.name, param);
  }

  const all = [...callable.values()];
  return {
    programmaticToolCalling,
    tools: callable,
    programTools: programmaticToolCalling ? all.filter((tool) => tool.callers.includes('programmatic')).map((tool) => programTool(tool, tool.param)) : [],
    summaries: all.map((tool) => ({ name: tool.id, type: tool.kind, callers: tool.callers })),
  };
}
