import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { ChatPlatform } from './core/signature.ts';

/** The webhook's HTTP answers, in each platform's shape. */
export const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

export function answer(platform: ChatPlatform, text: string): APIGatewayProxyStructuredResultV2 {
  if (platform === 'slack') return json(200, { response_type: 'ephemeral', text });
  if (platform === 'dingtalk') return json(200, { msgtype: 'text', text: { content: text } });
  // Feishu takes only a 200 here; with its app configured the answer goes through its message API
  // (feishuHandOff), without it only into the ChatOps Command event.
  return json(200, {});
}
