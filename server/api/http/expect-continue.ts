import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/api-error.ts';
import { newId } from '../../platform/ids.ts';

/**
 * `Expect: 100-continue`: the client (curl, for a large body) sends its request's head and
 * waits for `100 Continue` before it sends the body, so that it never uploads a body the server
 * will refuse. Node sends the 100 itself, as soon as the head arrives, before any hook or route
 * has looked at the request; unless the server listens to `checkContinue`, as it does here. The
 * 100 then goes out only when a body is about to be read (`askForBody`, from the JSON body
 * reader), and a request refused before that (its key, its URL, its Content-Length over the
 * limit, one body too many arriving, its charset) is answered at once, its body never asked for.
 * The connection of such an answer is closed: the client may send its body all the same (curl
 * does once it has waited a second), or never, and the connection can neither wait for it nor
 * read it as the next request. Node closes it itself (a final status with no 100 before it ends
 * the connection), which test/expect-continue.test.ts holds it to; the error handler says so in
 * the answer's headers where it answers a refused body.
 */

/** Requests whose client waits for a 100 Continue not sent yet, and the response to send it on. */
const withheld = new WeakMap<IncomingMessage, ServerResponse>();

/** The longest `Expect` value a 417 names back. */
const MAX_EXPECT_SHOWN = 100;

/**
 * Takes `Expect: 100-continue` requests from Node, which would send the 100 at once; and answers
 * any other expectation, which Node answers with a bare 417, in the envelope. That answer comes
 * before routing, as Node's refusals of a malformed request do (error-handler.ts,
 * answerClientError), and is not journaled either.
 */
export function holdContinues(app: FastifyInstance): void {
  const server: Server = app.server;
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    withheld.set(request, response);
    // What Node does without this listener, less the 100.
    server.emit('request', request, response);
  });
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const named = String(request.headers.expect).slice(0, MAX_EXPECT_SHOWN);
    const error = new ApiError('expectation_failed', `The server meets no expectation but 100-continue; this request names Expect: ${JSON.stringify(named)}.`);
    const json = JSON.stringify(error.toEnvelope());
    response.writeHead(error.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(json),
      'x-request-id': newId('req'),
      connection: 'close',
    });
    response.end(json);
  });
}

/** Sends the 100 Continue a request's client waits for, if it waits: called as its body is about to be read. At most once a request. */
export function askForBody(request: IncomingMessage): void {
  const response = withheld.get(request);
  if (response === undefined) return;
  withheld.delete(request);
  response.writeContinue();
}

/** Whether a request's client waits for a 100 Continue the server has not sent: its body is not coming, or not yet. */
export function bodyWithheld(request: IncomingMessage): boolean {
  return withheld.has(request);
}
