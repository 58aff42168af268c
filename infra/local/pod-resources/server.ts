/**
 * The simulated kubelet's PodResources v1 endpoint: a gRPC server on a unix socket, one per simulated
 * node, serving `List`, `GetAllocatableResources` and `Get` of kubernetes/kubelet
 * pkg/apis/podresources/v1/api.proto (service `v1.PodResourcesLister`). gRPC is HTTP/2 (node:http2)
 * with the framing of grpc/grpc doc/PROTOCOL-HTTP2.md: a request is POST `/<package>.<Service>/<Method>`
 * with `content-type: application/grpc`; each message is a 1-byte compressed flag, a 4-byte big-endian
 * length and the protobuf bytes; the status travels in trailers (`grpc-status`, `grpc-message`).
 * The real socket is /var/lib/kubelet/pod-resources/kubelet.sock (kubernetes/enhancements#2761).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { dirname } from 'node:path';
import {
  decodeGetRequest,
  encodeAllocatableResponse,
  encodeGetResponse,
  encodeListResponse,
  type ContainerDevicesMsg,
  type PodResourcesMsg,
} from './wire.ts';

/** What the node's kubelet knows at the moment of a call. */
export interface PodResourcesState {
  /** Every pod on the node with the devices its containers were given (device plugins, DRA). */
  pods(): PodResourcesMsg[];
  /** The devices the device plugins advertise healthy now (devicemanager GetAllocatableDevices). */
  allocatable(): ContainerDevicesMsg[];
}

/** gRPC status codes (grpc/grpc doc/statuscodes.md). */
const UNKNOWN = 2;
const INVALID_ARGUMENT = 3;
const UNIMPLEMENTED = 12;
const INTERNAL = 13;

const SERVICE = '/v1.PodResourcesLister/';

function frame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(0, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** The one message of a unary request (uncompressed: we announce no grpc-accept-encoding). */
function unframe(body: Buffer): Buffer {
  if (body.length < 5) throw new Error('no message');
  if (body.readUInt8(0) !== 0) throw new Error('compressed message');
  const len = body.readUInt32BE(1);
  if (body.length < 5 + len) throw new Error('truncated message');
  return body.subarray(5, 5 + len);
}

function reply(stream: ServerHttp2Stream, message: Buffer | undefined, code = 0, text = ''): void {
  if (stream.destroyed) return;
  if (message === undefined) {
    // Trailers-only: the status in the one header block (PROTOCOL-HTTP2.md "Trailers-Only").
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(code),
        'grpc-message': encodeURI(text),
      },
      { endStream: true },
    );
    return;
  }
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end(frame(message));
}

function answer(
  state: PodResourcesState,
  method: string,
  request: Buffer,
): { message?: Buffer; code: number; text: string } {
  switch (method) {
    case 'List':
      return { message: encodeListResponse(state.pods()), code: 0, text: '' };
    case 'GetAllocatableResources':
      return { message: encodeAllocatableResponse(state.allocatable()), code: 0, text: '' };
    case 'Get': {
      const { podName, podNamespace } = decodeGetRequest(request);
      const pod = state.pods().find((p) => p.name === podName && p.namespace === podNamespace);
      // The kubelet answers a pod it does not run with a plain error (status Unknown): "pod <name> in
      // namespace <ns> not found" (kubernetes pkg/kubelet/apis/podresources/server_v1.go Get).
      if (!pod) return { code: UNKNOWN, text: `pod ${podName} in namespace ${podNamespace} not found` };
      return { message: encodeGetResponse(pod), code: 0, text: '' };
    }
    default:
      return { code: UNIMPLEMENTED, text: `unknown method ${method} for service v1.PodResourcesLister` };
  }
}

export class PodResourcesServer {
  private constructor(
    private readonly server: Http2Server,
    readonly socketPath: string,
    private readonly sessions: Set<Http2Session>,
  ) {}

  /** Listens on `socketPath` (its directory is created; a stale socket file is replaced). */
  static async start(socketPath: string, state: PodResourcesState): Promise<PodResourcesServer> {
    mkdirSync(dirname(socketPath), { recursive: true });
    rmSync(socketPath, { force: true });
    const server = createServer();
    // A client keeps its connection open between calls (grpc-js does): close ends them.
    const sessions = new Set<Http2Session>();
    server.on('session', (s) => {
      sessions.add(s);
      s.once('close', () => sessions.delete(s));
    });
    server.on('stream', (stream, headers) => {
      const path = String(headers[':path'] ?? '');
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', () => undefined);
      stream.on('end', () => {
        if (headers[':method'] !== 'POST' || !String(headers['content-type'] ?? '').startsWith('application/grpc'))
          return reply(stream, undefined, INVALID_ARGUMENT, 'not a gRPC request');
        if (!path.startsWith(SERVICE))
          return reply(stream, undefined, UNIMPLEMENTED, `unknown service ${path.split('/')[1] ?? ''}`);
        try {
          const r = answer(state, path.slice(SERVICE.length), unframe(Buffer.concat(chunks)));
          reply(stream, r.message, r.code, r.text);
        } catch (err) {
          reply(stream, undefined, INTERNAL, (err as Error).message);
        }
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new PodResourcesServer(server, socketPath, sessions);
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sessions) s.destroy();
    await closed;
    rmSync(this.socketPath, { force: true });
  }
}
