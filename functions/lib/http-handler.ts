import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type * as z from 'zod';
import { DropEvent } from './failure-meaning.ts';
import {
  classifyErrors,
  loggerContext,
  loggerOf,
  metered,
  outcomeOfHttp,
  type Ctx,
  type HandlerContext,
  type LoggerSource,
  type MeteredSpec,
} from './middleware.ts';

/** The HTTP variants (API Gateway v2): HTTP maps the failures' meanings onto status codes (handler.ts). */
export interface HttpHandlerSpec<B> extends MeteredSpec {
  name: string;
  logger: LoggerSource;
  /** The JSON body's schema; a body that fails it answers 400 naming every problem. */
  body: z.ZodType<B>;
  handle(body: B, ctx: HandlerContext & { request: APIGatewayProxyEventV2 }): Promise<unknown>;
}

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** API Gateway v2 (HTTP API): JSON body parsed at the edge; failures answered by their meaning. */
export function httpHandler<B>(spec: HttpHandlerSpec<B>) {
  const h = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(
      classifyErrors(
        (o) =>
          o.status === 'dropped'
            ? json(400, { error: o.reason })
            : o.status === 'already-done'
              ? json(404, { error: o.reason })
              : json(200, o),
        (_err, meaning) =>
          meaning === 'retry' ? json(503, { error: 'try again later' }) : json(500, { error: 'internal error' }),
      ),
    )
    .handler(async (request, context) => {
      let raw: unknown;
      try {
        const text =
          request.body === undefined
            ? ''
            : request.isBase64Encoded
              ? Buffer.from(request.body, 'base64').toString('utf8')
              : request.body;
        raw = JSON.parse(text || 'null');
      } catch (err) {
        throw new DropEvent(`body: not JSON (${(err as Error).message})`);
      }
      const parsed = spec.body.safeParse(raw);
      if (!parsed.success)
        throw new DropEvent(
          parsed.error.issues.map((i) => `body${i.path.length ? '.' + i.path.join('.') : ''}: ${i.message}`).join('; '),
        );
      const result = await spec.handle(parsed.data, { logger: loggerOf(context), context, request });
      return json(200, { status: 'done', result });
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfHttp);
}

export interface RawHttpHandlerSpec extends MeteredSpec {
  name: string;
  logger: LoggerSource;
  /** The raw body text (base64 undone) and the request: signed webhooks must see the bytes as sent. */
  handle(
    body: string,
    ctx: HandlerContext & { request: APIGatewayProxyEventV2 },
  ): Promise<APIGatewayProxyStructuredResultV2>;
}

/**
 * API Gateway v2 for webhooks that verify a signature over the raw body and answer in their
 * platform's shape (chat): the function builds its own response; failures are classified as for
 * every handler (retryable → 503, anything else → 500, logged).
 */
export function rawHttpHandler(spec: RawHttpHandlerSpec) {
  const h = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(
      classifyErrors(
        (o) => (o.status === 'dropped' ? json(400, { error: o.reason }) : json(200, o)),
        (_err, meaning) =>
          meaning === 'retry' ? json(503, { error: 'try again later' }) : json(500, { error: 'internal error' }),
      ),
    )
    .handler(async (request, context) => {
      const text =
        request.body === undefined
          ? ''
          : request.isBase64Encoded
            ? Buffer.from(request.body, 'base64').toString('utf8')
            : request.body;
      return spec.handle(text, { logger: loggerOf(context), context, request });
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfHttp);
}
