import type { ProgramTool } from '../../runtime/isolate-program.ts';
import type { AllowedCaller, FunctionTool, Tool } from '../../schemas/tools.ts';
import { ApiError } from '../api-error.ts';

/** The request's tools, read once: who may call what, and what a program gets on `tools`. */
export interface ToolSet {
  readonly programmaticToolCalling: boolean;
  readonly functions: ReadonlyMap<string, FunctionTool>;
  /** Function tools a program may call, in request order. */
  readonly programTools: readonly ProgramTool[];
  readonly summaries: readonly { readonly name: string; readonly callers: readonly AllowedCaller[] }[];
}

export function callersOf(tool: { allowed_callers?: readonly AllowedCaller[] | null | undefined }): readonly AllowedCaller[] {
  return tool.allowed_callers && tool.allowed_callers.length > 0 ? tool.allowed_callers : ['direct'];
}

export function readToolSet(tools: readonly Tool[] = []): ToolSet {
  const programmaticToolCalling = tools.some((tool) => tool.type === 'programmatic_tool_calling');
  const functions = new Map<string, FunctionTool>();
  const names = new Map<string, number>();
  for (const [index, tool] of tools.entries()) {
    if (!('name' in tool) || typeof tool.name !== 'string') continue;
    const earlier = names.get(tool.name);
    if (earlier !== undefined) {
      throw new ApiError('duplicate_tool_name', `tools[${index}] and tools[${earlier}] are both named '${tool.name}'; tool names must be unique.`, `tools[${index}].name`);
    }
    names.set(tool.name, index);
    if ('allowed_callers' in tool && Array.isArray(tool.allowed_callers) && tool.allowed_callers.includes('programmatic') && !programmaticToolCalling) {
      throw new ApiError(
        'programmatic_tool_calling_not_enabled',
        `tools[${index}] ('${tool.name}') allows the programmatic caller, but tools has no {"type": "programmatic_tool_calling"} entry to enable programs.`,
        `tools[${index}].allowed_callers`,
      );
    }
    if (tool.type === 'function') functions.set(tool.name, tool);
  }
  const programTools = [...functions.values()]
    .filter((tool) => programmaticToolCalling && callersOf(tool).includes('programmatic'))
    .map((tool) => ({ name: tool.name, parseOutputAsJson: tool.output_schema != null }));
  const summaries = [...functions.values()].map((tool) => ({ name: tool.name, callers: callersOf(tool) }));
  return { programmaticToolCalling, functions, programTools, summaries };
}
