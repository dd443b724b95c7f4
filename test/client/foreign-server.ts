import { createServer, type Server } from 'node:http';

/** What a server that is not leaseq answers to every request. */
export interface ForeignAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An HTTP server on 127.0.0.1 (a free port) answering every request with `answer`. */
export async function startForeignServer(
  answer: ForeignAnswer,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
