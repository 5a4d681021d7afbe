/** Exit code of a usage or configuration error (a wrong flag, a port in use, a bad file, an unsupported Node.js). */
export const USAGE_EXIT_CODE = 2;
