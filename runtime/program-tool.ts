import { z } from 'zod';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { TextMemo } from './text-memo.ts';

const JsonSchema = z.record(z.string(), z.unknown());

/** A tool as a program sees it: what the worker protocol carries and a program is started with. */
export const ProgramTool = z.strictObject({
  /** Its name on `tools`, or inside its namespace. */
  name: z.string(),
  /** Set for a namespace's tool: the program calls `tools.<namespace>.<name>`. */
  namespace: z.string().optional(),
  /**
   * What a call takes: one string, sent as it is (`text`), or an object of arguments, sent as
   * JSON (`json`, also when absent).
   */
  input: z.enum(['text', 'json']).optional(),
  /**
   * The embedder's name for the tool's kind: sealed with the tool (a resume runs with the tag it
   * started with), never read by the runtime. The server names its tool kinds here.
   */
  tag: z.string().optional(),
  /** True when the program receives `JSON.parse(output)` rather than the output's text. */
  parseOutputAsJson: z.boolean(),
  /** Arguments a call sends as `null` when the program leaves them out. */
  nullDefaults: z.array(z.string()).optional(),
  /** Strict `parameters`: arguments are checked against it before a call leaves the isolate. */
  parameters: JsonSchema.optional(),
  /** `output_schema`: a parsed output is checked against it before the program receives it. */
  outputSchema: JsonSchema.optional(),
});
export type ProgramTool = z.infer<typeof ProgramTool>;

/**
 * A tool as a fingerprint seals it: its schemas by hash, so the fingerprint stays small. A resume
 * takes the schemas from the request and must find the same hash (see unsealTools).
 */
export const SealedTool = ProgramTool.omit({ parameters: true, outputSchema: true }).extend({ schemasSha256: z.string().optional() });
export type SealedTool = z.infer<typeof SealedTool>;

/** True when a call to the tool takes one string rather than an object of arguments. */
export function takesText(tool: Pick<ProgramTool, 'input'>): boolean {
  return tool.input === 'text';
}

/** How calls name a tool: `name`, or `namespace.name` (tool names cannot hold a dot). */
export function toolId(tool: Pick<ProgramTool, 'name' | 'namespace'>): string {
  return tool.namespace === undefined ? tool.name : `${tool.namespace}.${tool.name}`;
}

/** Tools' schemas hashed before, by their JSON as given: the same text is the same value, and so the same canonical hash. */
const hashedSchemas = new TextMemo<string>(1_024, 4 * 2 ** 20);

function schemasSha256(tool: ProgramTool): string | undefined {
  if (tool.parameters === undefined && tool.outputSchema === undefined) return undefined;
  const schemas = [tool.parameters ?? null, tool.outputSchema ?? null];
  const text = JSON.stringify(schemas);
  return hashedSchemas.get(text) ?? hashedSchemas.set(text, sha256Hex(canonicalJson(schemas)));
}

export function sealTool(tool: ProgramTool): SealedTool {
  const { parameters: _parameters, outputSchema: _outputSchema, ...rest } = tool;
  const sha256 = schemasSha256(tool);
  return sha256 === undefined ? rest : { ...rest, schemasSha256: sha256 };
}

/**
 * The tools a program started with, its schemas taken from `current` (the tools of the request
 * resuming it). Returns the id of the first tool whose schemas are gone or changed instead.
 */
export function unsealTools(sealed: readonly SealedTool[], current: readonly ProgramTool[]): ProgramTool[] | { readonly changed: string } {
  const tools: ProgramTool[] = [];
  for (const { schemasSha256: sha256, ...tool } of sealed) {
    if (sha256 === undefined) {
      tools.push(tool);
      continue;
    }
    const id = toolId(tool);
    const now = current.find((candidate) => toolId(candidate) === id);
    if (!now || schemasSha256(now) !== sha256) return { changed: id };
    tools.push({ ...tool, ...(now.parameters ? { parameters: now.parameters } : {}), ...(now.outputSchema ? { outputSchema: now.outputSchema } : {}) });
  }
  return tools;
}
