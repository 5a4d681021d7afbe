import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

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

/** Takes `Expect: 100-continue` requests from Node, which would send the 100 at once. */
export function holdContinues(app: FastifyInstance): void {
  const server: Server = app.server;
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    withheld.set(request, response);
    // What Node does without this listener, less the 100.
    server.emit('request', request, response);
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
