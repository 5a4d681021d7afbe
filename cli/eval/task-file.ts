import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { matcherRegex } from '../../server/engine/stand-ins/text-matcher.ts';
import { formatParam } from '../../server/platform/request-validation.ts';
import { UsageError } from '../usage-error.ts';
import { messageOf, settled } from './settled.ts';

/**
 * An evaluation's task file (docs/EVAL.md): the tasks, the module of tool implementations the
 * client side runs, and, for the stand-in, the scenario file that scripts both modes.
 */

/** `/regex/flags` compiles, or the text is a substring to find; a number is read as its text. */
const Matcher = z.union([z.string().min(1), z.number().transform(String)]).refine(
  (matcher) => {
    try {
      matcherRegex(matcher);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'a /regex/flags that does not compile (quote it, or fix the pattern)' },
);

/**
 * A task's name is shown in a terminal, a Markdown table and an HTML page, and sent as
 * metadata (512 characters at most): one line of plain text, no `|`.
 */
const TaskName = z
  .string()
  .max(200)
  .regex(/^[^\u0000-\u001f\u007f-\u009f|]*$/, 'a task name is one line of text without control characters or |')
  .refine((name) => name.trim().length > 0, { message: 'a task name needs a visible character' });

/** What the Responses API accepts as a function's name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const Task = z
  .strictObject({
    name: TaskName,
    /** The user's message. */
    prompt: z.string().min(1),
    /** The tools of the module this task offers the model (default: all of them). */
    tools: z
      .array(z.string().min(1))
      .min(1)
      .refine((names) => new Set(names).size === names.length, { message: 'a tool is listed twice' })
      .optional(),
    /** The final answer contains it (case-insensitive), or matches it when written `/regex/flags`. */
    expect: Matcher.optional(),
    /** The name of a check function the module exports in `checks`. */
    check: z.string().min(1).optional(),
  })
  .refine((task) => task.expect !== undefined || task.check !== undefined, { message: 'a task needs expect or check, to say what a correct answer is' });
export type EvalTask = z.infer<typeof Task>;

const TaskFileSchema = z.strictObject({
  /** The request's `model`. */
  model: z.string().min(1).default('ptc-eval'),
  instructions: z.string().min(1).optional(),
  /** Scenario rules for the built-in stand-in (docs/STAND-IN.md), relative to the task file. */
  scenarios: z.string().min(1).optional(),
  /** The module of tool implementations (and checks), relative to the task file. */
  tools: z.string().min(1),
  tasks: z.array(Task).min(1),
});

/** One tool the client runs: its declaration's parts and its implementation. */
export interface EvalTool {
  readonly description?: string;
  readonly parameters: Record<string, unknown>;
  /** Passed on as the function tool's `strict`; absent leaves the API's default. */
  readonly strict?: boolean;
  /** Passed on as `output_schema`: a program receives the output parsed. */
  readonly outputSchema?: Record<string, unknown>;
  /** The client asks a person before each call (counted as an approval; the eval approves). */
  readonly approval?: boolean;
  run(args: Record<string, unknown>): unknown;
}

/** A check of a final answer: true when correct, false or a reason when not. */
export type EvalCheck = (
  answer: string,
  run: { readonly mode: 'direct' | 'ptc'; readonly calls: readonly { readonly name: string; readonly arguments: unknown }[] },
) => boolean | string | Promise<boolean | string>;

export interface TaskFile {
  readonly path: string;
  readonly model: string;
  readonly instructions?: string;
  /** Absolute path of the scenario file, when the task file names one. */
  readonly scenarios?: string;
  readonly tasks: readonly EvalTask[];
  readonly tools: ReadonlyMap<string, EvalTool>;
  readonly checks: ReadonlyMap<string, EvalCheck>;
}

/** A task file's size limit: it is a hand-written YAML document, never a data dump. */
const MAX_TASK_FILE_BYTES = 1024 * 1024;

/** The module's import (its top-level code) must settle within this. */
const MODULE_LOAD_TIMEOUT_MS = 30_000;

/** Reads and checks a task file and its module; every problem names the file and the field. */
export async function loadTaskFile(path: string): Promise<TaskFile> {
  const absolute = resolve(path);
  let document: unknown;
  try {
    const { size } = statSync(absolute);
    if (size > MAX_TASK_FILE_BYTES) throw new Error(`it has ${size} bytes, more than the ${MAX_TASK_FILE_BYTES} a task file may have`);
    const text = readFileSync(absolute, 'utf8');
    document = /\.json$/i.test(absolute) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new UsageError(`task file ${path}: ${(error as Error).message}`);
  }
  const parsed = TaskFileSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`task file ${path}: ${formatParam(issue.path) || '(root)'}: ${issue.message}`);
  }
  const file = parsed.data;
  const here = dirname(absolute);
  const modulePath = resolve(here, file.tools);
  const { tools, checks } = await loadModule(modulePath, path);

  file.tasks.forEach((task, index) => {
    const where = `task file ${path}: tasks[${index}]`;
    for (const name of task.tools ?? []) if (!tools.has(name)) throw new UsageError(`${where}.tools: ${modulePath} exports no tool "${name}"`);
    if (task.check !== undefined && !checks.has(task.check)) throw new UsageError(`${where}.check: ${modulePath} exports no check "${task.check}" in checks`);
  });
  const names = file.tasks.map((task) => task.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) throw new UsageError(`task file ${path}: two tasks are named "${repeated}"`);

  return {
    path: absolute,
    model: file.model,
    ...(file.instructions === undefined ? {} : { instructions: file.instructions }),
    ...(file.scenarios === undefined ? {} : { scenarios: resolve(here, file.scenarios) }),
    tasks: file.tasks,
    tools,
    checks,
  };
}

const ToolShape = z.looseObject({
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()),
  strict: z.boolean().optional(),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  approval: z.boolean().optional(),
  run: z.custom<EvalTool['run']>((value) => typeof value === 'function', { message: 'run must be a function' }),
});

async function loadModule(modulePath: string, taskPath: string): Promise<{ tools: Map<string, EvalTool>; checks: Map<string, EvalCheck> }> {
  let module: { tools?: unknown; checks?: unknown };
  try {
    module = (await settled(() => import(pathToFileURL(modulePath).href), 'its top-level code', MODULE_LOAD_TIMEOUT_MS)) as typeof module;
  } catch (error) {
    throw new UsageError(`task file ${taskPath}: tools: cannot load ${modulePath}: ${messageOf(error)}`);
  }
  if (module.tools === null || typeof module.tools !== 'object') {
    throw new UsageError(`${modulePath}: it must export tools (a named export of an ES module), an object from tool names to { parameters, run }`);
  }
  if (Object.keys(module.tools).length === 0) throw new UsageError(`${modulePath}: tools has no tool`);
  const tools = new Map<string, EvalTool>();
  for (const [name, value] of Object.entries(module.tools)) {
    if (!TOOL_NAME.test(name))
      throw new UsageError(`${modulePath}: tools.${name}: a tool's name is 1 to 64 letters, digits, _ or - (the Responses API's rule)`);
    const parsed = ToolShape.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new UsageError(`${modulePath}: tools.${name}${issue.path.length ? `.${formatParam(issue.path)}` : ''}: ${issue.message}`);
    }
    tools.set(name, value as EvalTool);
  }
  const checks = new Map<string, EvalCheck>();
  if (module.checks !== undefined) {
    if (module.checks === null || typeof module.checks !== 'object') throw new UsageError(`${modulePath}: checks must be an object from names to functions`);
    for (const [name, value] of Object.entries(module.checks)) {
      if (typeof value !== 'function') throw new UsageError(`${modulePath}: checks.${name} must be a function`);
      checks.set(name, value as EvalCheck);
    }
  }
  return { tools, checks };
}
