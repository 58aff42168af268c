/**
 * A minimal gRPC client of the kubelet's PodResources v1 (kubernetes/kubelet
 * pkg/apis/podresources/v1/api.proto, service `v1.PodResourcesLister`) over its unix socket: one
 * unary call per HTTP/2 connection (node:http2), framed as grpc/grpc doc/PROTOCOL-HTTP2.md says —
 * POST `/v1.PodResourcesLister/<Method>`, `content-type: application/grpc`, `te: trailers`, each message
 * a 1-byte compressed flag, a 4-byte big-endian length and its bytes; the status in the trailers
 * (`grpc-status`, or in the headers of a trailers-only answer). Loaded only when the socket exists
 * (pod-resources-source.ts), so an agent without it never pays for node:http2.
 */
import { connect, constants } from 'node:http2';
import { connect as connectUnix } from 'node:net';
import {
  decodeAllocatableResponse,
  decodeListResponse,
  type PodDevices,
  type PodResourcesEntry,
} from './pod-resources-wire.ts';

/** A kubelet answer larger than this is refused (a node's pod list is a few KiB; the kubelet's own cap is 16 MiB). */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export class PodResourcesError extends Error {
  override name = 'PodResourcesError';
}

type Method = 'List' | 'GetAllocatableResources';

/** One unary call with an empty request message; resolves to the response message's bytes. */
export function callPodResources(socketPath: string, method: Method, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const session = connect('http://localhost', { createConnection: () => connectUnix(socketPath) });
    let settled = false;
    const finish = (err: Error | undefined, value?: Buffer) => {
      if (settled) return;
      settled = true;
      session.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    session.on('error', (err) =>
      finish(new PodResourcesError(`PodResources ${method}: ${err.message}`, { cause: err })),
    );
    const req = session.request({
      ':method': 'POST',
      ':path': `/v1.PodResourcesLister/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    // The stream's idle timeout (no timer of ours): a kubelet that stops answering is an error.
    req.setTimeout(timeoutMs, () => {
      req.close(constants.NGHTTP2_CANCEL);
      finish(new PodResourcesError(`PodResources ${method}: no answer within ${timeoutMs} ms`));
    });
    let status: string | undefined;
    let message: string | undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('response', (h) => {
      if (h[':status'] !== 200) finish(new PodResourcesError(`PodResources ${method}: HTTP ${h[':status']}`));
      if (h['grpc-status'] !== undefined) [status, message] = [String(h['grpc-status']), h['grpc-message'] as string];
    });
    req.on('trailers', (t) => {
      [status, message] = [String(t['grpc-status']), t['grpc-message'] as string | undefined];
    });
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_RESPONSE_BYTES) finish(new PodResourcesError(`PodResources ${method}: answer over 4 MiB`));
      else chunks.push(c);
    });
    req.on('error', (err) => finish(new PodResourcesError(`PodResources ${method}: ${err.message}`, { cause: err })));
    req.on('end', () => {
      const said = message ? ` (${decodeURIComponent(message)})` : '';
      if (status !== '0')
        return finish(new PodResourcesError(`PodResources ${method}: gRPC status ${status ?? 'missing'}${said}`));
      const body = Buffer.concat(chunks);
      if (body.length < 5 || body.readUInt8(0) !== 0 || body.length < 5 + body.readUInt32BE(1))
        return finish(new PodResourcesError(`PodResources ${method}: no uncompressed message in the answer`));
      finish(undefined, body.subarray(5, 5 + body.readUInt32BE(1)));
    });
    req.end(Buffer.alloc(5)); // an empty message: flag 0, length 0
  });
}

export interface PodResourcesAnswer {
  pods: PodResourcesEntry[];
  /** Devices the kubelet counts allocatable (healthy) now. */
  allocatable: PodDevices[];
}

/** `List` and `GetAllocatableResources`, decoded. Throws PodResourcesError or ProtoError. */
export async function readPodResources(socketPath: string, timeoutMs: number): Promise<PodResourcesAnswer> {
  const list = await callPodResources(socketPath, 'List', timeoutMs);
  const allocatable = await callPodResources(socketPath, 'GetAllocatableResources', timeoutMs);
  return { pods: decodeListResponse(list), allocatable: decodeAllocatableResponse(allocatable) };
}
