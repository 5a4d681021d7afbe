/**
 * The hosted API's limits on a strict schema (Structured Outputs, "Supported schemas"): a
 * function's strict `parameters` past any of them is a 400 there, and here. The emulator applies
 * them to `output_schema` too. Checked by one walk of the schema, linear in its size, before ajv
 * sees it: ajv's cost grows faster than a schema where these limits bound it (60,000 enum values
 * take it seconds; 2,000 patternProperties 3.8 s), and within them it grows with the schema's
 * keywords (5,000 plain properties: 0.6 s here), which PTC_MAX_SCHEMA_BYTES and the deadline bound.
 */
export const STRICT_SCHEMA_LIMITS = {
  /** Levels of `properties` (or `items`) within `properties` (or `items`). */
  nestingLevels: 10,
  /** Entries of every `properties` and `patternProperties` in the schema, together. */
  objectProperties: 5_000,
  /**
   * Entries of every `patternProperties`, together: the emulator's own limit (the hosted API
   * has no `patternProperties` in strict mode), as ajv's cost grows with their cube (1,000
   * patterns: 0.36 s, 2,000: 3.8 s).
   */
  patternProperties: 500,
  /** Entries of every `enum` in the schema, together. */
  enumValues: 1_000,
  /** Characters of every property name, definition name, enum value and const value, together. */
  nameAndValueChars: 120_000,
  /** A string enum of more than this many values... */
  largeStringEnumValues: 250,
  /** ...has at most this many characters of values. */
  largeStringEnumChars: 15_000,
} as const;

const L = STRICT_SCHEMA_LIMITS;

/** Keywords whose value maps property names (or patterns) to the schemas of those properties. */
const PROPERTY_MAPS = new Set(['properties', 'patternProperties']);
/** Keywords whose value maps definition names to schemas. */
const DEFINITION_MAPS = new Set(['$defs', 'definitions']);
/** Keywords whose schemas describe what an array or object holds: one level deeper. */
const CONTENT_KEYWORDS = new Set(['items', 'prefixItems', 'additionalItems', 'contains', 'additionalProperties', 'unevaluatedItems', 'unevaluatedProperties']);

/**
 * Characters an enum or const value counts for: a string's own, a number's or boolean's as
 * written. An object or array counts for none itself; it is walked, and what it holds counts.
 */
function charsOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value).length : 0;
}

interface Node {
  readonly schema: object;
  readonly depth: number;
  /** Where it is: its parent and its key there, for the message that names it. */
  readonly parent?: Node;
  readonly key?: string;
}

/** `/properties/a/items` for a node and, optionally, a keyword of it; `the root` for none. */
function pointerOf(node: Node, keyword?: string): string {
  const keys: string[] = keyword === undefined ? [] : [keyword];
  for (let at: Node | undefined = node; at?.key !== undefined; at = at.parent) keys.unshift(at.key);
  return keys.length === 0 ? 'the root' : `/${keys.map((key) => key.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

/**
 * The first of the hosted API's strict-schema limits that `schema` is past, as a sentence
 * naming it and where; undefined when it is within them all. Every object and array in the
 * schema is visited once, iteratively (a deep schema cannot overflow the stack): data keywords
 * (`enum`, `const`, `default`, `examples`) too, since a `$ref` can point into them and ajv then
 * compiles what it finds there as a schema.
 */
export function strictSchemaLimitExceeded(schema: unknown): string | undefined {
  let properties = 0;
  let patterns = 0;
  let enumValues = 0;
  let chars = 0;
  if (schema === null || typeof schema !== 'object') return undefined;
  const stack: Node[] = [{ schema, depth: 0 }];
  const visit = (child: unknown, depth: number, parent: Node, key: string): void => {
    if (child !== null && typeof child === 'object') stack.push({ schema: child, depth, parent, key });
  };
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { schema: current, depth } = node;
    if (depth > L.nestingLevels) return `it nests more than ${L.nestingLevels} levels deep (the limit), ${depth} at ${pointerOf(node)}`;
    if (Array.isArray(current)) {
      current.forEach((child, index) => visit(child, depth, node, String(index)));
      continue;
    }
    for (const [keyword, value] of Object.entries(current)) {
      if (value === null || typeof value !== 'object') {
        if (keyword === 'const') chars += charsOf(value);
      } else if (keyword === 'enum' && Array.isArray(value)) {
        enumValues += value.length;
        if (enumValues > L.enumValues) return `it has more than ${L.enumValues} enum values in total (the limit), ${enumValues} by ${pointerOf(node, keyword)}`;
        let stringChars = 0;
        for (const entry of value) {
          const entryChars = charsOf(entry);
          chars += entryChars;
          if (typeof entry === 'string') stringChars += entryChars;
        }
        if (value.length > L.largeStringEnumValues && stringChars > L.largeStringEnumChars) {
          return `the enum at ${pointerOf(node, keyword)} has ${value.length} values, ${stringChars} characters of strings in all, over the limit of ${L.largeStringEnumChars} characters for an enum of more than ${L.largeStringEnumValues} values`;
        }
        visit(value, depth, node, keyword);
      } else if ((PROPERTY_MAPS.has(keyword) || DEFINITION_MAPS.has(keyword)) && !Array.isArray(value)) {
        const names = Object.keys(value);
        for (const name of names) chars += name.length;
        if (PROPERTY_MAPS.has(keyword)) {
          properties += names.length;
          if (properties > L.objectProperties)
            return `it has more than ${L.objectProperties} object properties in total (the limit), ${properties} by ${pointerOf(node, keyword)}`;
        }
        if (keyword === 'patternProperties') {
          patterns += names.length;
          if (patterns > L.patternProperties)
            return `it has more than ${L.patternProperties} patternProperties in total (the emulator's limit), ${patterns} by ${pointerOf(node, keyword)}`;
        }
        // A definition's depth is where it is used, which a walk without following `$ref` cannot know: it counts from the root.
        const map: Node = { schema: value, depth, parent: node, key: keyword };
        const childDepth = PROPERTY_MAPS.has(keyword) ? depth + 1 : 0;
        for (const name of names) visit((value as Record<string, unknown>)[name], childDepth, map, name);
      } else {
        // Any other object or array may hold schemas (`anyOf`, `not`, `if`, `dependentSchemas`, a
        // keyword ajv does not know, data a `$ref` points into): walked, so nothing is hidden from the counts.
        visit(value, CONTENT_KEYWORDS.has(keyword) ? depth + 1 : depth, node, keyword);
      }
      if (chars > L.nameAndValueChars) {
        return `its property names, definition names, enum values and const values come to more than ${L.nameAndValueChars} characters (the limit), ${chars} by ${pointerOf(node, keyword)}`;
      }
    }
  }
  return undefined;
}
