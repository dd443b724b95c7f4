import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does with the bytes of its connections. */
export type ProxyMode = 'pass' | 'stall';

interface Link {
  client: Socket;
  upstream: Socket;
  /** Bytes held while stalled, per direction. */
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

/**
 * A TCP proxy on 127.0.0.1 between callers and a server (or a server and its database), with
 * faults: `stall` stops forwarding in both directions while keeping every socket open (a
 * half-open link: requests vanish, answers never come), `cut` resets every connection, and
 * the upstream port can change under it (a restarted server on a new ephemeral port).
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly links = new Set<Link>();
  private mode: ProxyMode = 'pass';
  port = 0;

  constructor(private upstreamPort: number) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return `127.0.0.1:${this.port}`;
  }

  /** New connections go to `port`; existing ones stay where they are. */
  retarget(port: number): void {
    this.upstreamPort = port;
  }

  /** `stall`: nothing is forwarded (both ways) until `pass` again; sockets stay open. */
  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode !== 'pass') return;
    for (const link of this.links) {
      for (const chunk of link.held.toUpstream.splice(0)) link.upstream.write(chunk);
      for (const chunk of link.held.toClient.splice(0)) link.client.write(chunk);
    }
  }

  /** Resets every open connection (RST on both sides). */
  cut(): number {
    const count = this.links.size;
    for (const link of [...this.links]) this.drop(link);
    return count;
  }

  get connections(): number {
    return this.links.size;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    // As the server's and clients' own sockets do (ws, http): with Nagle's algorithm, a frame
    // written while an earlier one is unacknowledged waits for the peer's delayed ACK (~40 ms).
    const upstream = connect({ port: this.upstreamPort, host: '127.0.0.1', noDelay: true });
    client.setNoDelay(true);
    const link: Link = { client, upstream, held: { toUpstream: [], toClient: [] } };
    this.links.add(link);
    for (const socket of [client, upstream]) {
      socket.on('error', () => this.drop(link));
      socket.on('close', () => this.drop(link));
    }
    client.on('data', (chunk: Buffer) => {
      if (this.mode === 'stall') link.held.toUpstream.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.mode === 'stall') link.held.toClient.push(chunk);
      else client.write(chunk);
    });
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    link.client.resetAndDestroy();
    link.upstream.resetAndDestroy();
  }
}
