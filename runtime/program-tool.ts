import { z } from 'zod';

/**
 * A tool as a program sees it. Declared once here: fingerprints seal it and the worker
 * protocol carries it, so both parse it with this schema.
 */
export const ProgramTool = z.strictObject({
  /** Its name on `tools`, or inside its namespace. */
  name: z.string(),
  /** Set for a namespace's tool: the program calls `tools.<namespace>.<name>`. */
  namespace: z.string().optional(),
  /** What a call takes: an object of arguments (`json`, the default) or one string (`text`: custom tools). */
  input: z.enum(['json', 'text']).optional(),
  /** True when the program receives `JSON.parse(output)` (tools that declare `output_schema`). */
  parseOutputAsJson: z.boolean(),
});
export type ProgramTool = z.infer<typeof ProgramTool>;

/** How calls name a tool: `name`, or `namespace.name` (tool names cannot hold a dot). */
export function toolId(tool: Pick<ProgramTool, 'name' | 'namespace'>): string {
  return tool.namespace === undefined ? tool.name : `${tool.namespace}.${tool.name}`;
}
