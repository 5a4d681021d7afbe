import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import standalone from 'ajv/dist/standalone/index.js';
import { SchemaTooComplexError, ToolSchemaError } from './errors.ts';

/**
 * JSON Schemas of tools (strict `parameters`, `output_schema`) compiled with ajv. Each schema
 * gives a validator and the same validator as standalone JavaScript, which the prelude
 * evaluates inside the isolate so that a program's arguments are checked before its call leaves.
 * Compiling costs time that grows faster than the schema (ajv's enum and patternProperties
 * code is quadratic), so it runs only in the schema thread (schema-thread.ts), never on a
 * loop that serves requests or programs: schema-compiler.ts is the way in.
 */

/**
 * The most code one schema's validator may come to, in characters. Ajv's code runs 16 to 20
 * times a schema's JSON (measured: 2,000 small object properties, 300 KB, compile to 5.8 MB; a
 * subschema shared at every level of 13, 656 KB, to 10.7 MB). Tool schemas are kilobytes; a
 * schema of megabytes of code would be held by the caches and loaded into every program given it.
 */
export const MAX_VALIDATOR_CHARS = 8 * 2 ** 20;

export interface Validator {
  readonly validate: ValidateFunction;
  /** The validator as a CommonJS module body for the isolate (see GUEST_SCHEMA_MODULES). */
  readonly source: string;
}

const require = createRequire(import.meta.url);

/**
 * The only modules standalone validators may `require`, with their sources, read once from the
 * installed packages: ajv's helpers for string length and deep equality.
 */
export const GUEST_SCHEMA_MODULES: Readonly<Record<string, string>> = Object.fromEntries(
  ['ajv/dist/runtime/ucs2length', 'ajv/dist/runtime/equal', 'fast-deep-equal'].map((name) => [name, readFileSync(require.resolve(name), 'utf8')]),
);

const REQUIRE_CALL = /require\("([^"]*)"\)/g;

/** `root.a[0].b` for the JSON pointer `/a/0/b`. */
export function pathOf(root: string, pointer: string): string {
  let path = root;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path += /^\d+$/.test(segment) ? `[${segment}]` : /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return path;
}

/** One ajv error as a sentence naming the field: `arguments.city must be string`. */
export function describeViolation(error: ErrorObject, root: string): string {
  const where = pathOf(root, error.instancePath);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return `${where} is missing the required property '${String(params.missingProperty)}'`;
  if (error.keyword === 'additionalProperties') return `${where} has the property '${String(params.additionalProperty)}', which the schema does not allow`;
  if (error.keyword === 'enum') return `${where} must be one of ${JSON.stringify(params.allowedValues)}`;
  return `${where} ${error.message ?? 'does not match the schema'}`;
}

/**
 * The ajv class for the dialect a schema's `$schema` names: draft-07 when it names none (what
 * most tool schemas are written in), 2019-09, or 2020-12 (what zod's `toJSONSchema` and many
 * generators emit). Other dialects are refused by name.
 */
function ajvClassFor(schema: Readonly<Record<string, unknown>>): typeof Ajv | typeof Ajv2019 | typeof Ajv2020 {
  const dialect = schema['$schema'];
  if (dialect === undefined) return Ajv;
  if (typeof dialect === 'string') {
    const uri = dialect.replace(/#$/, '').replace(/^http:/, 'https:');
    if (uri === 'https://json-schema.org/draft-07/schema') return Ajv;
    if (uri === 'https://json-schema.org/draft/2019-09/schema') return Ajv2019;
    if (uri === 'https://json-schema.org/draft/2020-12/schema') return Ajv2020;
  }
  throw new ToolSchemaError(`$schema ${JSON.stringify(dialect)} is not a dialect the emulator checks (draft-07, 2019-09 or 2020-12)`);
}

/** The most of ajv's words on why a schema does not compile that a message carries: it lists every fault, and a schema can have hundreds of thousands. */
const MAX_SCHEMA_ERROR_CHARS = 1000;

function shortened(message: string): string {
  return message.length <= MAX_SCHEMA_ERROR_CHARS ? message : `${message.slice(0, MAX_SCHEMA_ERROR_CHARS)}… (${message.length} characters in all)`;
}

/**
 * An object of more properties than this anywhere in a schema has ajv check every keyword
 * (`allErrors`): stopping at the first error, ajv nests each property's code inside the
 * previous one's, and 3,000 properties overflow V8's parser (here and in the isolate). Below
 * it, the first error stops the check: a value of millions of wrong items makes one error, not
 * millions. Only the first error is reported either way.
 */
const FLAT_CODE_PROPERTIES = 1000;

function hasWideObject(schema: unknown): boolean {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const values = Array.isArray(node) ? node : Object.values(node);
    if (!Array.isArray(node)) {
      const properties = (node as Record<string, unknown>)['properties'];
      if (properties !== null && typeof properties === 'object' && Object.keys(properties).length > FLAT_CODE_PROPERTIES) return true;
    }
    for (const value of values) if (value !== null && typeof value === 'object') stack.push(value);
  }
  return false;
}

/** Compiles a schema. Throws ToolSchemaError when ajv cannot. Slow for big schemas: see above. */
export function compileValidator(schema: Readonly<Record<string, unknown>>): Validator {
  try {
    return compile(schema);
  } catch (error) {
    if (error instanceof ToolSchemaError) throw error;
    throw new ToolSchemaError(shortened((error as Error).message));
  }
}

function compile(schema: Readonly<Record<string, unknown>>): Validator {
  // A fresh instance per schema: ids (`$id`) of one request's schemas never clash with another's.
  // `optimize: false`: ajv's optimising pass is quadratic in an object's properties (1,000
  // properties: 370 ms with it, 60 ms without), and the code it saves is under a fifth.
  // `logger: false`: ajv prints a schema's whole generated code when it fails to compile.
  // `allErrors` for a schema with a wide object: see FLAT_CODE_PROPERTIES.
  // `inlineRefs: false`: a `$ref` is a call of the definition's function, not a copy of its code
  // at each use (999 uses of a 4,000-property definition ran ajv out of 4 GB): code linear in the schema.
  const AjvClass = ajvClassFor(schema);
  const ajv = new AjvClass({
    strict: false,
    allErrors: hasWideObject(schema),
    inlineRefs: false,
    validateFormats: false,
    ownProperties: true,
    logger: false,
    code: { source: true, esm: false, lines: false, optimize: false },
  });
  const validate = ajv.compile(schema);
  if ((validate as { $async?: boolean }).$async === true) throw new ToolSchemaError('asynchronous schemas ($async) are not supported');
  // The CommonJS module's exports are the function itself (its `default` is the same function).
  const source = (standalone as unknown as typeof standalone.default)(ajv, validate);
  if (source.length > MAX_VALIDATOR_CHARS) {
    throw new SchemaTooComplexError(
      `ajv compiles it to ${(source.length / 2 ** 20).toFixed(1)} MiB of code, over the ${MAX_VALIDATOR_CHARS / 2 ** 20} MiB the emulator loads for one schema`,
    );
  }
  for (const [, name] of source.matchAll(REQUIRE_CALL)) {
    if (!(name! in GUEST_SCHEMA_MODULES)) throw new ToolSchemaError(`it needs ${name}, which the emulator does not load into programs`);
  }
  return { validate, source };
}
