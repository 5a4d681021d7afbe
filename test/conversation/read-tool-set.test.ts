import { describe, expect, it } from 'vitest';
import type { McpListToolsItem } from '../../schemas/items.ts';
import type { ApiErrorCode } from '../../schemas/error-codes.ts';
import type { AllowedCaller, CustomTool, FunctionTool, McpTool, Tool } from '../../schemas/tools.ts';
import { ApiError } from '../../server/platform/api-error.ts';
import { readToolSet, withMcpListings, type LoadedTool, type ToolSet } from '../../server/engine/conversation/tool-set.ts';

// readToolSet on its own: who may call each tool of a request, what a program gets on `tools`,
// the hosted containers, what waits for a tool search and what a search brought in, the schemas
// programs check with, and the tool definitions it refuses.

// ---- tools -------------------------------------------------------------------------------------

const PTC: Tool = { type: 'programmatic_tool_calling' };
const PROGRAMS_ONLY: AllowedCaller[] = ['programmatic'];
const BOTH: AllowedCaller[] = ['direct', 'programmatic'];

const OBJECT = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false };
const RESULT = { type: 'object', properties: { hits: { type: 'integer' } } };

function fn(name: string, extra: Partial<FunctionTool> = {}): FunctionTool {
  return { type: 'function', name, ...extra };
}
function custom(name: string, extra: Partial<CustomTool> = {}): CustomTool {
  return { type: 'custom', name, ...extra };
}
function namespace(name: string, members: (FunctionTool | CustomTool)[]): Tool {
  return { type: 'namespace', name, description: `The ${name} tools.`, tools: members };
}
function mcp(label: string, extra: Partial<McpTool> = {}): McpTool {
  return { type: 'mcp', server_label: label, server_url: `https://${label}.example.com/mcp`, ...extra };
}
/** Tools a search loaded, where the conversation has them. */
function loadedAt(param: string, ...tools: Tool[]): LoadedTool[] {
  return tools.map((tool, inner) => ({ tool, param: param === 'previous_response_id' ? param : `${param}.tools[${inner}]` }));
}

// ---- what a tool set is read as ----------------------------------------------------------------

/** Each callable tool but its definition, in order. */
function callable(toolSet: ToolSet): unknown[] {
  return [...toolSet.tools.values()].map(({ definition: _definition, ...rest }) => rest);
}

/** A deferred tool by its name: a namespace with its deferred members, an MCP server by its label. */
function deferredNames(toolSet: ToolSet): string[] {
  return toolSet.deferred.map((tool) => {
    if (tool.type === 'namespace') return `${tool.name}(${tool.tools.map((member) => member.name).join(', ')})`;
    if (tool.type === 'mcp') return `mcp ${tool.server_label}`;
    return 'name' in tool && typeof tool.name === 'string' ? tool.name : tool.type;
  });
}

function errorOf(tools: Tool[], loaded: LoadedTool[] = []): ApiError {
  let toolSet: ToolSet;
  try {
    toolSet = readToolSet(tools, loaded);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error(`expected an ApiError, but the tools were read: ${JSON.stringify(callable(toolSet))}`);
}

describe('readToolSet: who may call what', () => {
  it.each<[name: string, tools: Tool[] | undefined, expected: unknown[]]>([
    ['no tools at all', undefined, []],
    ['an empty list', [], []],
    ['a function, callable directly by default', [fn('lookup')], [{ id: 'lookup', name: 'lookup', kind: 'function', callers: ['direct'], param: 'tools[0]' }]],
    [
      'allowed_callers: [] as absent',
      [fn('lookup', { allowed_callers: [] })],
      [{ id: 'lookup', name: 'lookup', kind: 'function', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      'allowed_callers: null as absent',
      [fn('lookup', { allowed_callers: null })],
      [{ id: 'lookup', name: 'lookup', kind: 'function', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      'the callers a tool allows, as it lists them',
      [PTC, fn('a', { allowed_callers: PROGRAMS_ONLY }), fn('b', { allowed_callers: ['programmatic', 'direct'] })],
      [
        { id: 'a', name: 'a', kind: 'function', callers: ['programmatic'], param: 'tools[1]' },
        { id: 'b', name: 'b', kind: 'function', callers: ['programmatic', 'direct'], param: 'tools[2]' },
      ],
    ],
    ['a custom tool', [custom('note')], [{ id: 'note', name: 'note', kind: 'custom', callers: ['direct'], param: 'tools[0]' }]],
    ['the local shell, with no environment', [{ type: 'shell' }], [{ id: 'shell', name: 'shell', kind: 'shell', callers: ['direct'], param: 'tools[0]' }]],
    [
      'the local shell, said so',
      [{ type: 'shell', environment: { type: 'local' } }],
      [{ id: 'shell', name: 'shell', kind: 'shell', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      'the shell with environment: null, local',
      [{ type: 'shell', environment: null }],
      [{ id: 'shell', name: 'shell', kind: 'shell', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      'the hosted shell, in a container',
      [PTC, { type: 'shell', environment: { type: 'container_auto' }, allowed_callers: BOTH }],
      [{ id: 'shell', name: 'shell', kind: 'hosted_shell', callers: ['direct', 'programmatic'], param: 'tools[1]' }],
    ],
    ['apply_patch', [{ type: 'apply_patch' }], [{ id: 'apply_patch', name: 'apply_patch', kind: 'apply_patch', callers: ['direct'], param: 'tools[0]' }]],
    [
      'code_interpreter',
      [{ type: 'code_interpreter', container: { type: 'auto' } }],
      [{ id: 'code_interpreter', name: 'code_interpreter', kind: 'code_interpreter', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      "a namespace's members, by namespace.name and where each is",
      [fn('top'), namespace('crm', [fn('find'), custom('note', { allowed_callers: PROGRAMS_ONLY })]), PTC],
      [
        { id: 'top', name: 'top', kind: 'function', callers: ['direct'], param: 'tools[0]' },
        { id: 'crm.find', name: 'find', namespace: 'crm', kind: 'function', callers: ['direct'], param: 'tools[1].tools[0]' },
        { id: 'crm.note', name: 'note', namespace: 'crm', kind: 'custom', callers: ['programmatic'], param: 'tools[1].tools[1]' },
      ],
    ],
    ['an empty namespace: nothing to call', [namespace('crm', [])], []],
    [
      'no callable tool for an MCP server until its listing, tool_search, the programs entry or echoed tools',
      [mcp('docs'), { type: 'tool_search' }, PTC, { type: 'web_search' }, { type: 'image_generation' }],
      [],
    ],
    [
      'tools in request order, whatever their kind',
      [{ type: 'apply_patch' }, custom('c'), fn('f'), { type: 'shell' }],
      [
        { id: 'apply_patch', name: 'apply_patch', kind: 'apply_patch', callers: ['direct'], param: 'tools[0]' },
        { id: 'c', name: 'c', kind: 'custom', callers: ['direct'], param: 'tools[1]' },
        { id: 'f', name: 'f', kind: 'function', callers: ['direct'], param: 'tools[2]' },
        { id: 'shell', name: 'shell', kind: 'shell', callers: ['direct'], param: 'tools[3]' },
      ],
    ],
  ])('%s', (_, tools, expected) => {
    expect(callable(readToolSet(tools))).toEqual(expected);
  });

  it.each<[name: string, tools: Tool[], enabled: boolean]>([
    ['no tools', [], false],
    ['tools but no programs entry', [fn('a'), { type: 'shell' }], false],
    ['the programs entry, last', [fn('a'), PTC], true],
    ['the programs entry alone', [PTC], true],
  ])('programs are enabled with %s: %s', (_, tools, enabled) => {
    expect(readToolSet(tools).programmaticToolCalling).toBe(enabled);
  });

  it("keeps each tool's definition as the request has it", () => {
    const member = fn('find');
    const tools: Tool[] = [fn('a'), namespace('crm', [member]), { type: 'shell' }];
    const toolSet = readToolSet(tools);
    expect(toolSet.tools.get('a')?.definition).toBe(tools[0]);
    expect(toolSet.tools.get('crm.find')?.definition).toBe(member);
    expect(toolSet.tools.get('shell')?.definition).toBe(tools[2]);
  });

  it('summarises every callable tool for the stand-in model: its id, kind and callers', () => {
    const toolSet = readToolSet([
      PTC,
      fn('a', { allowed_callers: BOTH }),
      namespace('crm', [custom('note')]),
      { type: 'shell', environment: { type: 'container_auto' } },
    ]);
    expect(toolSet.summaries).toEqual([
      { name: 'a', type: 'function', callers: ['direct', 'programmatic'] },
      { name: 'crm.note', type: 'custom', callers: ['direct'] },
      { name: 'shell', type: 'hosted_shell', callers: ['direct'] },
    ]);
  });

  it.each<[name: string, tools: Tool[], loaded: LoadedTool[], expected: unknown[]]>([
    ['none', [fn('a')], [], []],
    [
      'a server by its label, who may call it and where it is',
      [PTC, fn('a'), mcp('crm', { allowed_callers: BOTH }), mcp('docs')],
      [],
      [
        { label: 'crm', callers: ['direct', 'programmatic'], param: 'tools[2]' },
        { label: 'docs', callers: ['direct'], param: 'tools[3]' },
      ],
    ],
    ['a deferred server: not yet', [mcp('crm', { defer_loading: true })], [], []],
    [
      'a deferred server a search loaded, where the request has it',
      [mcp('crm', { defer_loading: true })],
      loadedAt('input[2]', mcp('crm')),
      [{ label: 'crm', callers: ['direct'], param: 'tools[0]' }],
    ],
    [
      'a server only a search brought, where the search has it',
      [],
      loadedAt('input[2]', mcp('crm')),
      [{ label: 'crm', callers: ['direct'], param: 'input[2].tools[0]' }],
    ],
  ])('MCP servers: %s', (_, tools, loaded, expected) => {
    const { mcpServers } = readToolSet(tools, loaded);
    expect([...mcpServers.values()].map(({ definition: _definition, ...rest }) => rest)).toEqual(expected);
    for (const [label, server] of mcpServers) expect(server.definition.server_label).toBe(label);
  });
});

describe('readToolSet: what a program gets on `tools`', () => {
  it.each<[name: string, tools: Tool[], expected: unknown[]]>([
    ['nothing when programs are not enabled', [fn('a'), custom('b'), { type: 'shell' }, { type: 'apply_patch' }], []],
    ['nothing a program may not call', [PTC, fn('a'), fn('b', { allowed_callers: ['direct'] })], []],
    [
      'a strict function (strict by default) with its parameters',
      [PTC, fn('find', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY })],
      [{ name: 'find', parseOutputAsJson: false, parameters: OBJECT }],
    ],
    [
      'a function with strict: true',
      [PTC, fn('find', { parameters: OBJECT, strict: true, allowed_callers: BOTH })],
      [{ name: 'find', parseOutputAsJson: false, parameters: OBJECT }],
    ],
    [
      'a function with strict: null, strict as by default',
      [PTC, fn('find', { parameters: OBJECT, strict: null, allowed_callers: BOTH })],
      [{ name: 'find', parseOutputAsJson: false, parameters: OBJECT }],
    ],
    [
      'a function with strict: false, without its parameters',
      [PTC, fn('find', { parameters: OBJECT, strict: false, allowed_callers: PROGRAMS_ONLY })],
      [{ name: 'find', parseOutputAsJson: false }],
    ],
    ['a function with parameters: null', [PTC, fn('find', { parameters: null, allowed_callers: PROGRAMS_ONLY })], [{ name: 'find', parseOutputAsJson: false }]],
    [
      'a function with an output_schema: its output parsed and checked',
      [PTC, fn('find', { strict: false, output_schema: RESULT, allowed_callers: PROGRAMS_ONLY })],
      [{ name: 'find', parseOutputAsJson: true, outputSchema: RESULT }],
    ],
    [
      'a function with output_schema: null',
      [PTC, fn('find', { output_schema: null, allowed_callers: PROGRAMS_ONLY })],
      [{ name: 'find', parseOutputAsJson: false }],
    ],
    ['a custom tool', [PTC, custom('note', { allowed_callers: PROGRAMS_ONLY })], [{ name: 'note', tag: 'custom', input: 'text', parseOutputAsJson: false }]],
    [
      "a namespace's members, with their namespace",
      [PTC, namespace('crm', [fn('find', { allowed_callers: PROGRAMS_ONLY }), custom('note', { allowed_callers: BOTH }), fn('direct_only')])],
      [
        { name: 'find', namespace: 'crm', parseOutputAsJson: false },
        { name: 'note', namespace: 'crm', tag: 'custom', input: 'text', parseOutputAsJson: false },
      ],
    ],
    [
      'the local shell: an action checked against its schema, limits sent as null, results parsed',
      [PTC, { type: 'shell', allowed_callers: PROGRAMS_ONLY }],
      [
        {
          name: 'shell',
          tag: 'shell',
          parseOutputAsJson: true,
          parameters: expect.objectContaining({ type: 'object', required: ['commands'], additionalProperties: false }),
          nullDefaults: ['timeout_ms', 'max_output_length'],
        },
      ],
    ],
    [
      'the hosted shell: the same, answered by the emulator',
      [PTC, { type: 'shell', environment: { type: 'container_reference', container_id: 'cntr_1' }, allowed_callers: PROGRAMS_ONLY }],
      [
        {
          name: 'shell',
          tag: 'hosted_shell',
          parseOutputAsJson: true,
          parameters: expect.objectContaining({ required: ['commands'] }),
          nullDefaults: ['timeout_ms', 'max_output_length'],
        },
      ],
    ],
    [
      'apply_patch: an operation checked against its schema, the status parsed',
      [PTC, { type: 'apply_patch', allowed_callers: PROGRAMS_ONLY }],
      [{ name: 'apply_patch', tag: 'apply_patch', parseOutputAsJson: true, parameters: { allOf: expect.any(Array) } }],
    ],
    [
      'code_interpreter: its code checked, the outputs parsed',
      [PTC, { type: 'code_interpreter', container: 'cntr_1', allowed_callers: PROGRAMS_ONLY }],
      [{ name: 'code_interpreter', tag: 'code_interpreter', parseOutputAsJson: true, parameters: expect.objectContaining({ required: ['code'] }) }],
    ],
    ["no MCP server's tools before its listing", [PTC, mcp('crm', { allowed_callers: PROGRAMS_ONLY })], []],
    [
      'in request order',
      [fn('z', { allowed_callers: PROGRAMS_ONLY }), PTC, custom('a', { allowed_callers: PROGRAMS_ONLY })],
      [
        { name: 'z', parseOutputAsJson: false },
        { name: 'a', tag: 'custom', input: 'text', parseOutputAsJson: false },
      ],
    ],
  ])('%s', (_, tools, expected) => {
    expect(readToolSet(tools).programTools).toEqual(expected);
  });
});

describe('readToolSet: the containers and the tool search', () => {
  /** The optional fields, only those the tool set has. */
  const optional = (toolSet: ToolSet) =>
    Object.fromEntries(
      (['hostedShellContainer', 'codeInterpreterContainer', 'toolSearch'] as const)
        .filter((key) => Object.hasOwn(toolSet, key))
        .map((key) => [key, toolSet[key]]),
    );

  it.each<[name: string, tools: Tool[], expected: Record<string, unknown>]>([
    ['none without them', [fn('a'), { type: 'apply_patch' }], {}],
    ['no container for the local shell', [{ type: 'shell', environment: { type: 'local' } }], {}],
    [
      "the emulator's container for container_auto",
      [{ type: 'shell', environment: { type: 'container_auto' } }],
      { hostedShellContainer: 'cntr_ptc_emulated' },
    ],
    [
      'the container a shell references',
      [{ type: 'shell', environment: { type: 'container_reference', container_id: 'cntr_abc' } }],
      { hostedShellContainer: 'cntr_abc' },
    ],
    ["code_interpreter's container by id", [{ type: 'code_interpreter', container: 'cntr_xyz' }], { codeInterpreterContainer: 'cntr_xyz' }],
    [
      "the emulator's container for code_interpreter's auto",
      [{ type: 'code_interpreter', container: { type: 'auto' } }],
      { codeInterpreterContainer: 'cntr_ptc_emulated' },
    ],
    [
      'both, each its own',
      [
        { type: 'code_interpreter', container: 'cntr_ci' },
        { type: 'shell', environment: { type: 'container_reference', container_id: 'cntr_sh' } },
      ],
      { hostedShellContainer: 'cntr_sh', codeInterpreterContainer: 'cntr_ci' },
    ],
    ['the tool search', [fn('a'), { type: 'tool_search', execution: 'client' }], { toolSearch: { type: 'tool_search', execution: 'client' } }],
  ])('%s', (_, tools, expected) => {
    expect(optional(readToolSet(tools))).toEqual(expected);
  });
});

describe('readToolSet: tools marked defer_loading, and what searches loaded', () => {
  it.each<[name: string, tools: Tool[], loaded: LoadedTool[], expected: { tools: unknown[]; deferred: string[] }]>([
    [
      'a deferred function waits for a search',
      [fn('a'), fn('find', { defer_loading: true })],
      [],
      { tools: [['a', 'tools[0]', ['direct']]], deferred: ['find'] },
    ],
    ['defer_loading: false is not deferred', [fn('find', { defer_loading: false })], [], { tools: [['find', 'tools[0]', ['direct']]], deferred: [] }],
    [
      'a deferred tool a search loaded counts, where the request has it',
      [fn('find', { defer_loading: true }), custom('note', { defer_loading: true })],
      loadedAt('input[3]', fn('find', { defer_loading: true })),
      { tools: [['find', 'tools[0]', ['direct']]], deferred: ['note'] },
    ],
    [
      "a tool only a search brought joins, where the search's output has it",
      [fn('a')],
      loadedAt('input[3]', fn('extra'), custom('other')),
      {
        tools: [
          ['a', 'tools[0]', ['direct']],
          ['extra', 'input[3].tools[0]', ['direct']],
          ['other', 'input[3].tools[1]', ['direct']],
        ],
        deferred: [],
      },
    ],
    [
      "a loaded tool the request has already: the request's stands",
      [fn('a', { allowed_callers: null })],
      loadedAt('input[3]', fn('a', { allowed_callers: ['direct'], description: 'other' })),
      { tools: [['a', 'tools[0]', ['direct']]], deferred: [] },
    ],
    [
      'a tool two searches loaded: the first stands',
      [],
      [...loadedAt('input[1]', fn('x')), ...loadedAt('input[3]', fn('x'))],
      { tools: [['x', 'input[1].tools[0]', ['direct']]], deferred: [] },
    ],
    [
      'a tool from a stored response: named by previous_response_id',
      [],
      loadedAt('previous_response_id', fn('x')),
      { tools: [['x', 'previous_response_id', ['direct']]], deferred: [] },
    ],
    [
      "a namespace's deferred members wait, the rest count",
      [namespace('crm', [fn('find'), fn('add', { defer_loading: true }), custom('note', { defer_loading: true })])],
      [],
      { tools: [['crm.find', 'tools[0].tools[0]', ['direct']]], deferred: ['crm(add, note)'] },
    ],
    [
      'a namespace whose members all wait: nothing to call',
      [namespace('crm', [fn('add', { defer_loading: true })])],
      [],
      { tools: [], deferred: ['crm(add)'] },
    ],
    [
      'a deferred member a search loaded counts, where the request has it',
      [namespace('crm', [fn('find'), fn('add', { defer_loading: true }), fn('drop', { defer_loading: true })])],
      loadedAt('input[2]', namespace('crm', [fn('add', { defer_loading: true })])),
      {
        tools: [
          ['crm.find', 'tools[0].tools[0]', ['direct']],
          ['crm.add', 'tools[0].tools[1]', ['direct']],
        ],
        deferred: ['crm(drop)'],
      },
    ],
    [
      "members a search brought join the request's namespace of that name",
      [namespace('crm', [fn('find')])],
      loadedAt('input[2]', namespace('crm', [fn('find'), fn('merge')])),
      {
        tools: [
          ['crm.find', 'tools[0].tools[0]', ['direct']],
          ['crm.merge', 'input[2].tools[0].tools[1]', ['direct']],
        ],
        deferred: [],
      },
    ],
    [
      'a namespace only a search brought joins whole',
      [fn('a')],
      loadedAt('input[2]', namespace('docs', [fn('read'), custom('write')])),
      {
        tools: [
          ['a', 'tools[0]', ['direct']],
          ['docs.read', 'input[2].tools[0].tools[0]', ['direct']],
          ['docs.write', 'input[2].tools[0].tools[1]', ['direct']],
        ],
        deferred: [],
      },
    ],
    [
      'members of one namespace two searches loaded join once',
      [],
      [...loadedAt('input[1]', namespace('docs', [fn('read')])), ...loadedAt('input[3]', namespace('docs', [fn('read'), fn('list')]))],
      {
        tools: [
          ['docs.read', 'input[1].tools[0].tools[0]', ['direct']],
          ['docs.list', 'input[3].tools[0].tools[1]', ['direct']],
        ],
        deferred: [],
      },
    ],
    [
      "a loaded namespace named as one of the request's tools: left out",
      [fn('crm')],
      loadedAt('input[2]', namespace('crm', [fn('find')])),
      { tools: [['crm', 'tools[0]', ['direct']]], deferred: [] },
    ],
    [
      "a loaded tool named as one of the request's namespaces: left out",
      [namespace('crm', [fn('find')])],
      loadedAt('input[2]', fn('crm')),
      { tools: [['crm.find', 'tools[0].tools[0]', ['direct']]], deferred: [] },
    ],
    [
      "a stored namespace's members: named by previous_response_id",
      [namespace('crm', [fn('find')])],
      loadedAt('previous_response_id', namespace('crm', [fn('merge')])),
      {
        tools: [
          ['crm.find', 'tools[0].tools[0]', ['direct']],
          ['crm.merge', 'previous_response_id', ['direct']],
        ],
        deferred: [],
      },
    ],
    ['a deferred MCP server waits', [mcp('crm', { defer_loading: true })], [], { tools: [], deferred: ['mcp crm'] }],
    [
      'a loaded tool that allows programs, with programs enabled: programs may call it',
      [PTC],
      loadedAt('input[2]', fn('x', { allowed_callers: BOTH })),
      { tools: [['x', 'input[2].tools[0]', ['direct', 'programmatic']]], deferred: [] },
    ],
    [
      'a loaded tool that allows programs, without programs enabled: direct only, not refused',
      [fn('a')],
      loadedAt('input[2]', fn('x', { allowed_callers: BOTH }), namespace('ns', [custom('y', { allowed_callers: BOTH })])),
      {
        tools: [
          ['a', 'tools[0]', ['direct']],
          ['x', 'input[2].tools[0]', ['direct']],
          ['ns.y', 'input[2].tools[1].tools[0]', ['direct']],
        ],
        deferred: [],
      },
    ],
  ])('%s', (_, tools, loaded, expected) => {
    const toolSet = readToolSet(tools, loaded);
    expect({ tools: [...toolSet.tools.values()].map((tool) => [tool.id, tool.param, tool.callers]), deferred: deferredNames(toolSet) }).toEqual(expected);
  });

  it('gives programs a loaded tool only when the request enables them', () => {
    const loaded = loadedAt('input[2]', fn('x', { allowed_callers: BOTH }));
    expect(readToolSet([PTC], loaded).programTools).toEqual([{ name: 'x', parseOutputAsJson: false }]);
    expect(readToolSet([], loaded).programTools).toEqual([]);
  });

  it("keeps a deferred namespace's other fields, with only its waiting members", () => {
    const crm: Tool = { type: 'namespace', name: 'crm', description: 'CRM.', tools: [fn('find'), fn('add', { defer_loading: true })] };
    expect(readToolSet([crm]).deferred).toEqual([
      { type: 'namespace', name: 'crm', description: 'CRM.', tools: [{ type: 'function', name: 'add', defer_loading: true }] },
    ]);
  });
});

describe('readToolSet: the schemas programs check with', () => {
  it.each<[name: string, tools: Tool[], loaded: LoadedTool[], expected: unknown[]]>([
    ['none without programs', [fn('a', { parameters: OBJECT })], [], []],
    ['none for a tool programs may not call', [PTC, fn('a', { parameters: OBJECT, output_schema: RESULT })], [], []],
    [
      "a strict function's parameters and its output_schema",
      [PTC, fn('find', { parameters: OBJECT, output_schema: RESULT, allowed_callers: PROGRAMS_ONLY })],
      [],
      [
        { schema: OBJECT, toolName: 'find', param: 'tools[1].parameters' },
        { schema: RESULT, toolName: 'find', param: 'tools[1].output_schema' },
      ],
    ],
    [
      'no parameters of a function with strict: false',
      [PTC, fn('find', { parameters: OBJECT, strict: false, output_schema: RESULT, allowed_callers: BOTH })],
      [],
      [{ schema: RESULT, toolName: 'find', param: 'tools[1].output_schema' }],
    ],
    ['none for parameters: null', [PTC, fn('find', { parameters: null, allowed_callers: BOTH })], [], []],
    ['none for custom tools and built-ins', [PTC, custom('note', { allowed_callers: BOTH }), { type: 'shell', allowed_callers: BOTH }], [], []],
    [
      "a namespace member's, named as programs reach it",
      [namespace('crm', [fn('find'), fn('add', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY })]), PTC],
      [],
      [{ schema: OBJECT, toolName: 'crm.add', param: 'tools[0].tools[1].parameters' }],
    ],
    [
      "a deferred tool's, though no search loaded it yet",
      [PTC, fn('find', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY, defer_loading: true })],
      [],
      [{ schema: OBJECT, toolName: 'find', param: 'tools[1].parameters' }],
    ],
    [
      "a deferred tool's once only, when a search loaded it",
      [PTC, fn('find', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY, defer_loading: true })],
      loadedAt('input[1]', fn('find', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY, defer_loading: true })),
      [{ schema: OBJECT, toolName: 'find', param: 'tools[1].parameters' }],
    ],
    [
      "a loaded tool's, where the search has it, programs enabled or not",
      [fn('a')],
      loadedAt(
        'input[2]',
        fn('x', { parameters: OBJECT, output_schema: RESULT, allowed_callers: BOTH }),
        namespace('ns', [fn('y', { output_schema: RESULT, allowed_callers: BOTH })]),
      ),
      [
        { schema: OBJECT, toolName: 'x', param: 'input[2].tools[0].parameters' },
        { schema: RESULT, toolName: 'x', param: 'input[2].tools[0].output_schema' },
        { schema: RESULT, toolName: 'ns.y', param: 'input[2].tools[1].tools[0].output_schema' },
      ],
    ],
    [
      "a stored loaded tool's: named by previous_response_id",
      [PTC],
      loadedAt('previous_response_id', fn('x', { parameters: OBJECT, allowed_callers: PROGRAMS_ONLY })),
      [{ schema: OBJECT, toolName: 'x', param: 'previous_response_id' }],
    ],
    ['none for a loaded tool only the model may call', [PTC], loadedAt('input[2]', fn('x', { parameters: OBJECT })), []],
  ])('%s', (_, tools, loaded, expected) => {
    expect(readToolSet(tools, loaded).schemas).toEqual(expected);
  });
});

// ---- refused definitions -----------------------------------------------------------------------

interface Expected {
  readonly code: ApiErrorCode;
  readonly param: string;
  readonly message: string;
}

const NOT_ENABLED = `allows the programmatic caller, but tools has no {"type": "programmatic_tool_calling"} entry to enable programs.`;

describe('readToolSet refuses', () => {
  it.each<[name: string, tools: Tool[], expected: Expected]>([
    [
      'two functions of one name',
      [fn('lookup'), fn('lookup')],
      { code: 'duplicate_tool_name', param: 'tools[1].name', message: "tools[1] and tools[0] are both named 'lookup'; tool names must be unique." },
    ],
    [
      'a function and a custom tool of one name',
      [custom('x'), fn('a'), fn('x')],
      { code: 'duplicate_tool_name', param: 'tools[2].name', message: "tools[2] and tools[0] are both named 'x'" },
    ],
    [
      'a namespace named as a function',
      [fn('crm'), namespace('crm', [])],
      { code: 'duplicate_tool_name', param: 'tools[1].name', message: "tools[1] and tools[0] are both named 'crm'" },
    ],
    [
      'an MCP server labelled as a function',
      [fn('crm'), mcp('crm')],
      { code: 'duplicate_tool_name', param: 'tools[1].server_label', message: "tools[1] and tools[0] are both named 'crm'" },
    ],
    [
      'a function named as an MCP server',
      [mcp('crm'), fn('crm')],
      { code: 'duplicate_tool_name', param: 'tools[1].name', message: "tools[1] and tools[0] are both named 'crm'" },
    ],
    [
      'two MCP servers of one label',
      [mcp('crm'), mcp('crm', { server_url: 'https://other.example.com' })],
      { code: 'duplicate_tool_name', param: 'tools[1].server_label', message: "tools[1] and tools[0] are both named 'crm'" },
    ],
    [
      'two shells',
      [{ type: 'shell' }, { type: 'shell', environment: { type: 'container_auto' } }],
      { code: 'duplicate_tool_name', param: 'tools[1].type', message: "tools[1] and tools[0] are both named 'shell'" },
    ],
    [
      'two apply_patch tools',
      [{ type: 'apply_patch' }, { type: 'apply_patch' }],
      { code: 'duplicate_tool_name', param: 'tools[1].type', message: "both named 'apply_patch'" },
    ],
    [
      'two code_interpreters',
      [
        { type: 'code_interpreter', container: 'a' },
        { type: 'code_interpreter', container: 'b' },
      ],
      { code: 'duplicate_tool_name', param: 'tools[1].type', message: "both named 'code_interpreter'" },
    ],
    [
      'a shell and a function named shell',
      [fn('shell'), { type: 'shell' }],
      { code: 'duplicate_tool_name', param: 'tools[1].type', message: "tools[1] and tools[0] are both named 'shell'" },
    ],
    [
      'two members of one name in a namespace',
      [namespace('crm', [fn('add'), custom('add')])],
      { code: 'duplicate_tool_name', param: 'tools[0].tools[1].name', message: "tools[0].tools[1] and tools[0].tools[0] are both named 'crm.add'" },
    ],
    [
      'two tools of one name, one of them deferred',
      [fn('find', { defer_loading: true }), fn('find')],
      { code: 'duplicate_tool_name', param: 'tools[1].name', message: "both named 'find'" },
    ],
    [
      'a function programs may call, programs not enabled',
      [fn('lookup', { allowed_callers: PROGRAMS_ONLY })],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('lookup') ${NOT_ENABLED}` },
    ],
    [
      'a function both may call, programs not enabled',
      [fn('a'), fn('lookup', { allowed_callers: BOTH })],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[1].allowed_callers', message: `tools[1] ('lookup') ${NOT_ENABLED}` },
    ],
    [
      'a custom tool programs may call, programs not enabled',
      [custom('note', { allowed_callers: BOTH })],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('note') ${NOT_ENABLED}` },
    ],
    [
      'the shell programs may call, programs not enabled',
      [{ type: 'shell', allowed_callers: PROGRAMS_ONLY }],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('shell') ${NOT_ENABLED}` },
    ],
    [
      'apply_patch programs may call, programs not enabled',
      [{ type: 'apply_patch', allowed_callers: PROGRAMS_ONLY }],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('apply_patch') ${NOT_ENABLED}` },
    ],
    [
      'code_interpreter programs may call, programs not enabled',
      [{ type: 'code_interpreter', container: 'c', allowed_callers: PROGRAMS_ONLY }],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('code_interpreter') ${NOT_ENABLED}` },
    ],
    [
      'an MCP server programs may call, programs not enabled',
      [mcp('crm', { allowed_callers: PROGRAMS_ONLY })],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('crm') ${NOT_ENABLED}` },
    ],
    [
      'a namespace member programs may call, programs not enabled',
      [namespace('crm', [fn('find'), fn('add', { allowed_callers: PROGRAMS_ONLY })])],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].tools[1].allowed_callers', message: `tools[0].tools[1] ('add') ${NOT_ENABLED}` },
    ],
    [
      'a deferred tool programs may call, programs not enabled',
      [fn('find', { allowed_callers: PROGRAMS_ONLY, defer_loading: true })],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: `tools[0] ('find') ${NOT_ENABLED}` },
    ],
    [
      'a deferred namespace member programs may call, programs not enabled',
      [namespace('crm', [fn('add', { allowed_callers: PROGRAMS_ONLY, defer_loading: true })])],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].tools[0].allowed_callers', message: `tools[0].tools[0] ('add') ${NOT_ENABLED}` },
    ],
    [
      'the first mistake in request order: a tool for programs before a duplicate name',
      [fn('a', { allowed_callers: PROGRAMS_ONLY }), fn('a')],
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', message: "tools[0] ('a')" },
    ],
    [
      'the first mistake in request order: a duplicate name before a tool for programs',
      [fn('a'), fn('a', { allowed_callers: PROGRAMS_ONLY })],
      { code: 'duplicate_tool_name', param: 'tools[1].name', message: "both named 'a'" },
    ],
  ])('%s', (_, tools, expected) => {
    const error = errorOf(tools);
    expect({ code: error.code, param: error.param }).toEqual({ code: expected.code, param: expected.param });
    expect(error.status).toBe(400);
    expect(error.message).toContain(expected.message);
  });

  it.each<[name: string, tools: Tool[]]>([
    ['a namespace and a member named alike', [namespace('crm', [fn('crm')])]],
    ['members of one name in two namespaces', [namespace('a', [fn('x')]), namespace('b', [fn('x')])]],
    ['a function named as a built-in it is not', [fn('apply_patch_helper'), { type: 'apply_patch' }]],
    ['the programs entry twice', [PTC, PTC, fn('a', { allowed_callers: PROGRAMS_ONLY })]],
    [
      'programs enabled by an entry after the tools that need it',
      [fn('a', { allowed_callers: PROGRAMS_ONLY }), namespace('n', [custom('b', { allowed_callers: PROGRAMS_ONLY })]), PTC],
    ],
  ])('does not refuse %s', (_, tools) => {
    expect(() => readToolSet(tools)).not.toThrow();
  });

  it.each<[name: string, tools: Tool[], loaded: LoadedTool[]]>([
    ["a loaded tool named as one of the request's", [fn('a')], loadedAt('input[1]', fn('a'))],
    ['a loaded tool that allows programs, without programs enabled', [], loadedAt('input[1]', fn('x', { allowed_callers: PROGRAMS_ONLY }))],
    [
      'two searches loading the same namespace member',
      [],
      [...loadedAt('input[1]', namespace('n', [fn('x')])), ...loadedAt('input[3]', namespace('n', [fn('x')]))],
    ],
  ])("does not refuse %s: the request's rules bind only its own tools", (_, tools, loaded) => {
    expect(() => readToolSet(tools, loaded)).not.toThrow();
  });
});

// ---- MCP servers' tools, once listed ------------------------------------------------------------

function listing(label: string, tools: McpListToolsItem['tools'], error?: string): McpListToolsItem {
  return { type: 'mcp_list_tools', id: `mcpl_${label}`, server_label: label, tools, ...(error === undefined ? {} : { error }) };
}

describe('withMcpListings', () => {
  const FIND = { name: 'find', input_schema: {} };
  const DROP = { name: 'drop', input_schema: {}, annotations: { readOnlyHint: false } };
  const READ = { name: 'read', input_schema: {}, annotations: { readOnlyHint: true } };

  it.each<[name: string, tools: Tool[], listings: McpListToolsItem[], expected: unknown[]]>([
    ['nothing without a listing', [mcp('crm')], [], []],
    [
      "a server's listed tools, as server_label.name, with the server's callers and place",
      [fn('a'), PTC, mcp('crm', { allowed_callers: BOTH })],
      [listing('crm', [FIND, READ])],
      [
        { id: 'a', name: 'a', kind: 'function', callers: ['direct'], param: 'tools[0]' },
        { id: 'crm.find', name: 'find', namespace: 'crm', kind: 'mcp', callers: ['direct', 'programmatic'], param: 'tools[2]', listed: { inputSchema: {} } },
        {
          id: 'crm.read',
          name: 'read',
          namespace: 'crm',
          kind: 'mcp',
          callers: ['direct', 'programmatic'],
          param: 'tools[2]',
          listed: { inputSchema: {} },
          annotations: { readOnlyHint: true },
        },
      ],
    ],
    ['nothing from a listing that failed', [mcp('crm')], [listing('crm', [FIND], 'connection refused')], []],
    ['nothing from the listing of a server the request lacks', [mcp('crm')], [listing('docs', [FIND])], []],
    [
      'only the tools allowed_tools names',
      [mcp('crm', { allowed_tools: ['read', 'missing'] })],
      [listing('crm', [FIND, READ])],
      [
        {
          id: 'crm.read',
          name: 'read',
          namespace: 'crm',
          kind: 'mcp',
          callers: ['direct'],
          param: 'tools[0]',
          listed: { inputSchema: {} },
          annotations: { readOnlyHint: true },
        },
      ],
    ],
    [
      'only the read-only tools, by the filter',
      [mcp('crm', { allowed_tools: { read_only: true } })],
      [listing('crm', [FIND, DROP, READ])],
      [
        {
          id: 'crm.read',
          name: 'read',
          namespace: 'crm',
          kind: 'mcp',
          callers: ['direct'],
          param: 'tools[0]',
          listed: { inputSchema: {} },
          annotations: { readOnlyHint: true },
        },
      ],
    ],
    [
      'the tools that are not read-only, by the filter (no hint: not read-only)',
      [mcp('crm', { allowed_tools: { read_only: false, tool_names: ['find', 'drop', 'read'] } })],
      [listing('crm', [FIND, DROP, READ])],
      [
        { id: 'crm.find', name: 'find', namespace: 'crm', kind: 'mcp', callers: ['direct'], param: 'tools[0]', listed: { inputSchema: {} } },
        {
          id: 'crm.drop',
          name: 'drop',
          namespace: 'crm',
          kind: 'mcp',
          callers: ['direct'],
          param: 'tools[0]',
          listed: { inputSchema: {} },
          annotations: { readOnlyHint: false },
        },
      ],
    ],
  ])('%s', (_, tools, listings, expected) => {
    const toolSet = withMcpListings(readToolSet(tools), new Map(listings.map((item) => [item.server_label, item])));
    expect(callable(toolSet)).toEqual(expected);
  });

  it('gives programs the listed tools of a server they may call, and the stand-in every one', () => {
    const toolSet = withMcpListings(
      readToolSet([PTC, mcp('crm', { allowed_callers: PROGRAMS_ONLY }), mcp('docs')]),
      new Map([
        ['crm', listing('crm', [FIND])],
        ['docs', listing('docs', [READ])],
      ]),
    );
    expect(toolSet.programTools).toEqual([{ name: 'find', namespace: 'crm', tag: 'mcp', parseOutputAsJson: false }]);
    expect(toolSet.summaries).toEqual([
      { name: 'crm.find', type: 'mcp', callers: ['programmatic'], parameters: {} },
      { name: 'docs.read', type: 'mcp', callers: ['direct'], parameters: {} },
    ]);
  });
});
