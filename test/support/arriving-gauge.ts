/** The server's gauge of bytes received of request bodies (and WebSocket messages) not yet served (GET /metrics). */
export async function arrivingBytes(server: { readonly baseURL: string }): Promise<number> {
  const text = await (await fetch(new URL('/metrics', server.baseURL))).text();
  const match = /^ptc_request_body_bytes_arriving (\d+)$/m.exec(text);
  if (!match) throw new Error(`no ptc_request_body_bytes_arriving in /metrics:\n${text}`);
  return Number(match[1]);
}

/** Waits until the server's gauge meets `holds` (it reads, and lets go, in its own time). */
export async function untilArriving(server: { readonly baseURL: string }, holds: (bytes: number) => boolean): Promise<void> {
  while (!holds(await arrivingBytes(server))) await new Promise((resolve) => setTimeout(resolve, 20));
}
