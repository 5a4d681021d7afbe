/**
 * Reading a JSON Schema as the autopilot needs it: a node with its local `$ref`s followed, the
 * types it allows, and the schema of an object's property. Only references inside the schema
 * (`#/…`) are followed, never a URL; a chain of references is followed at most MAX_REF_HOPS deep.
 */

export type SchemaNode = Readonly<Record<string, unknown>>;

const MAX_REF_HOPS = 16;

export function isNode(value: unknown): value is SchemaNode {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The node a JSON pointer (`#/$defs/address`) names inside `root`, or undefined. */
function pointed(root: SchemaNode, ref: string): SchemaNode | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      // `#/%zz`: no pointer, so no node.
      return undefined;
    }
    if (!Object.hasOwn(node as object, key)) return undefined;
    if (!isNode(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return isNode(node) ? node : undefined;
}

/** `schema` with its `$ref` chain followed (within `root`); the node itself when it has none. */
export function resolved(schema: unknown, root: SchemaNode): SchemaNode | undefined {
  let node = isNode(schema) ? schema : undefined;
  for (let hop = 0; node && typeof node['$ref'] === 'string' && hop < MAX_REF_HOPS; hop++) node = pointed(root, node['$ref']);
  return node;
}

/** The branches a value may match: the node's `anyOf`/`oneOf` members, or the node itself. */
export function branchesOf(node: SchemaNode, root: SchemaNode): SchemaNode[] {
  const members = [node['anyOf'], node['oneOf']].find(Array.isArray) as unknown[] | undefined;
  if (!members) return [node];
  return members.map((member) => resolved(member, root)).filter((member): member is SchemaNode => member !== undefined);
}

/** The JSON types a node allows (from `type`, `enum`, `const` and its branches); empty when anything goes. */
export function typesOf(node: SchemaNode, root: SchemaNode, depth = 0): Set<string> {
  const types = new Set<string>();
  if (depth > 4) return types;
  const type = node['type'];
  if (typeof type === 'string') types.add(type);
  else if (Array.isArray(type)) for (const entry of type) if (typeof entry === 'string') types.add(entry);
  const values = Array.isArray(node['enum']) ? node['enum'] : 'const' in node ? [node['const']] : [];
  for (const value of values) types.add(value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
  if (types.size === 0) {
    for (const branch of branchesOf(node, root)) if (branch !== node) for (const inner of typesOf(branch, root, depth + 1)) types.add(inner);
  }
  if (types.has('integer')) types.add('number');
  return types;
}

/** The schema of `object`'s property `name`: from `properties`, or from an `allOf`/`anyOf`/`oneOf` member that has it. */
export function propertySchema(object: SchemaNode, name: string, root: SchemaNode, depth = 0): SchemaNode | undefined {
  const properties = object['properties'];
  if (isNode(properties) && Object.hasOwn(properties, name)) return resolved(properties[name], root);
  if (depth > 4) return undefined;
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    const members = object[key];
    if (!Array.isArray(members)) continue;
    for (const member of members) {
      const node = resolved(member, root);
      const found = node && propertySchema(node, name, root, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}

/** The names of an object schema's declared properties (its own and its members'), in order. */
export function propertyNames(object: SchemaNode, root: SchemaNode, depth = 0): string[] {
  const names = new Set<string>(isNode(object['properties']) ? Object.keys(object['properties']) : []);
  if (depth <= 4) {
    for (const key of ['allOf', 'anyOf', 'oneOf']) {
      const members = object[key];
      if (!Array.isArray(members)) continue;
      for (const member of members) {
        const node = resolved(member, root);
        if (node) for (const name of propertyNames(node, root, depth + 1)) names.add(name);
      }
    }
  }
  return [...names];
}
