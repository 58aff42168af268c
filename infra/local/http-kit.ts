/**
 * What every local HTTP stand-in (the simulated API server, the bus, Alibaba Cloud, OOS, Alibaba
 * EventBridge) does the same way: read a request body with a size limit, and listen on a loopback port
 * the OS chooses. Each stand-in keeps its own protocol's answers (its 413 body, its errors).
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The request's body, or `tooLarge()` once it passes `maxBytes`: the rest is read and dropped, not kept,
 * and the socket stays open, so the caller can still answer its 413.
 */
export function readBody(req: IncomingMessage, maxBytes: number, tooLarge: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        reject(tooLarge());
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Listens (port 0: one the OS chooses) and answers the port; EADDRINUSE and friends reject the promise
 * instead of escaping as an unhandled error.
 */
export function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
