/**
 * The Node.js the package runs on (package.json's `engines`, which a test holds to this): 24 or
 * newer, for isolated-vm 7's native module and node:sqlite. Nothing here imports anything, so the
 * entry points can check before the rest of the package loads.
 */
export const REQUIRED_NODE_MAJOR = 24;

/** One line saying which Node.js is needed and which one this is, or undefined when this one will do. */
export function unsupportedNode(version: string = process.versions.node): string | undefined {
  if (Number(version.split('.')[0]) >= REQUIRED_NODE_MAJOR) return undefined;
  return `this needs Node.js ${REQUIRED_NODE_MAJOR} or newer, and this is Node.js ${version} (${process.execPath}); install Node.js ${REQUIRED_NODE_MAJOR} (https://nodejs.org) or put it first on PATH.`;
}
