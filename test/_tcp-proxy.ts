// A TCP proxy on loopback standing in for the primary's one address (a virtual IP, DNS name or
// HAProxy in production): clients connect to it; `point(port)` switches where new connections go
// and cuts the ones in flight, as moving a virtual IP does; `point(null)` refuses every connection.

import net from 'node:net';
import { onCleanup } from './_setup.ts';

export interface TcpProxy {
  port: number;
  point(target: number | null): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: number | null): Promise<TcpProxy> {
  let to = target;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (to === null) {
      client.destroy();
      return;
    }
    const upstream = net.connect(to, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  const close = async () => {
    for (const s of open) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  onCleanup(close);
  return {
    port,
    point(next) {
      to = next;
      for (const s of open) s.destroy();
      open.clear();
    },
    close,
  };
}
