import { nameParts } from './message-text.ts';
import { topicWords } from './tool-choice.ts';

/**
 * The JavaScript the autopilot writes, as a model using PTC would: the calls of each step
 * together in one `Promise.all` (a step waits only for the calls whose outputs it uses), every
 * result read once (the declared `output_schema` fields, or the output parsed as JSON when it
 * is JSON), a failed call kept as `{error}` rather than ending the program, and one `text()` of
 * a compact object keyed by tool.
 */

export interface ProgramCall {
  /** `name`, or `namespace.name`. */
  readonly tool: string;
  /** The arguments as JSON values; a text tool's input is a string. */
  readonly argument: unknown;
  /** Properties taken from an earlier call's result: `property` ← `calls[call].field`. */
  readonly references: readonly { readonly property: string; readonly call: number; readonly field: string }[];
  /** The `output_schema` fields to keep of its result; empty keeps it whole. */
  readonly outputFields: readonly string[];
}

const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in ' +
    'instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface ' +
    'package private protected public await async arguments eval undefined NaN Infinity tools text image read attempt pick results'
  ).split(' '),
);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The helpers every program of the autopilot (and the explorer) starts with. */
export const RESULT_HELPERS: readonly string[] = [
  "// Each call's result is read once: parsed when it is JSON text; a call that fails gives {error}.",
  'const read = (value) => { if (typeof value !== "string") return value; try { return JSON.parse(value); } catch { return value; } };',
  'const attempt = async (call) => { try { return read(await call()); } catch (error) { return { error: String(error?.message ?? error) }; } };',
];

/** A call of a tool with its arguments, as the program writes it: `tools.get_inventory({"sku":"a"})`. */
export function invocation(call: Pick<ProgramCall, 'tool' | 'argument'>): string {
  return `${toolPath(call.tool)}(${JSON.stringify(call.argument)})`;
}

/** `tools.get_inventory`, `tools.crm.add_note`, `tools["my-server"]["do.it"]`. */
export function toolPath(tool: string): string {
  const dot = tool.indexOf('.');
  const parts = dot === -1 ? [tool] : [tool.slice(0, dot), tool.slice(dot + 1)];
  return `tools${parts.map((part) => (IDENTIFIER.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`)).join('')}`;
}

/** A readable, unique variable for a call's result: `inventory` for `get_inventory`. */
function variableNames(calls: readonly ProgramCall[]): string[] {
  const taken = new Set<string>();
  return calls.map((call, index) => {
    const words = topicWords(call.tool).length > 0 ? topicWords(call.tool) : nameParts(call.tool);
    let name = words
      .map((word, at) => (at === 0 ? word : word[0]!.toUpperCase() + word.slice(1)))
      .join('')
      .replace(/[^A-Za-z0-9_$]/g, '');
    if (!IDENTIFIER.test(name) || RESERVED.has(name)) name = `result${index + 1}`;
    while (taken.has(name)) name = `${name}${index + 1}`;
    taken.add(name);
    return name;
  });
}

/** A JSON value as a JavaScript literal, with the referenced properties read from earlier results. */
function argumentLiteral(call: ProgramCall, names: readonly string[]): string {
  if (call.references.length === 0 || call.argument === null || typeof call.argument !== 'object' || Array.isArray(call.argument))
    return JSON.stringify(call.argument);
  const entries = Object.entries(call.argument as Record<string, unknown>).filter(([key]) => !call.references.some((reference) => reference.property === key));
  const parts = [
    ...entries.map(([key, value]) => `[${JSON.stringify(key)}]: ${JSON.stringify(value)}`),
    ...call.references.map((reference) => `[${JSON.stringify(reference.property)}]: ${names[reference.call]}?.[${JSON.stringify(reference.field)}]`),
  ];
  return `{ ${parts.join(', ')} }`;
}

/** The step of each call: 0 for calls that use no other call's result, else one past the latest it uses. */
function stepsOf(calls: readonly ProgramCall[]): number[] {
  const steps: number[] = [];
  calls.forEach((call, index) => {
    steps[index] = call.references.reduce((step, reference) => Math.max(step, (steps[reference.call] ?? 0) + 1), 0);
  });
  return steps;
}

export function writeProgram(calls: readonly ProgramCall[], comment: string): string {
  const names = variableNames(calls);
  const steps = stepsOf(calls);
  const lines = [`// ${comment.replace(/\s+/g, ' ').slice(0, 300)}`, ...RESULT_HELPERS];
  if (calls.some((call) => call.outputFields.length > 0)) {
    lines.push(
      'const pick = (value, fields) => value && typeof value === "object" && !("error" in value) ? Object.fromEntries(fields.filter((field) => field in value).map((field) => [field, value[field]])) : value;',
    );
  }
  const lastStep = Math.max(0, ...steps);
  for (let step = 0; step <= lastStep; step++) {
    const inStep = calls.map((call, index) => ({ call, index })).filter(({ index }) => steps[index] === step);
    if (inStep.length === 0) continue;
    const invocations = inStep.map(({ call }) => `attempt(() => ${toolPath(call.tool)}(${argumentLiteral(call, names)}))`);
    if (inStep.length === 1) {
      lines.push(`const ${names[inStep[0]!.index]} = await ${invocations[0]};`);
    } else {
      lines.push(
        `const [${inStep.map(({ index }) => names[index]).join(', ')}] = await Promise.all([`,
        ...invocations.map((invocation) => `  ${invocation},`),
        ']);',
      );
    }
  }
  const fields = calls.map((call, index) => {
    const value = call.outputFields.length > 0 ? `pick(${names[index]}, ${JSON.stringify(call.outputFields)})` : names[index];
    // A computed key: `{"__proto__": x}` would set the object's prototype, not a property.
    return `  [${JSON.stringify(call.tool)}]: ${value},`;
  });
  lines.push('text({', ...fields, '});');
  return `${lines.join('\n')}\n`;
}
