import secureJson from 'secure-json-parse';

/**
 * A request body's JSON as the server reads it, on its loop or in the JSON body thread alike:
 * Fastify's parser (secure-json-parse) with `__proto__` and `constructor.prototype` keys
 * refused. Throws a SyntaxError that says what is wrong, with the status Fastify gives one.
 */
export function parseJsonText(text: Buffer | string): unknown {
  try {
    return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw Object.assign(error instanceof SyntaxError ? error : new SyntaxError(String(error)), { statusCode: 400 });
  }
}
