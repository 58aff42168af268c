/**
 * IPv4/IPv6 address and CIDR parsing for the `cidr` matcher and for exact IP strings.
 *
 * Addresses are turned into 128-bit-safe bigints so both families share one range check. Event
 * strings that are not addresses simply never match; pattern strings that are not addresses are
 * refused with AWS's reasons (the caller wraps them in InvalidPatternError).
 */
export interface IpAddress {
  family: 4 | 6;
  value: bigint;
}

export interface CidrRange {
  family: 4 | 6;
  low: bigint;
  high: bigint;
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function parseV4(text: string): bigint | undefined {
  const m = V4.exec(text);
  if (!m) return undefined;
  let value = 0n;
  for (const part of m.slice(1)) {
    // Leading zeros are refused: some stacks read them as octal, so their meaning is ambiguous.
    if (part.length > 1 && part.startsWith('0')) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = (value << 8n) | BigInt(n);
  }
  return value;
}

/** Groups of a (possibly partial) IPv6 address; an embedded dotted IPv4 tail counts as two groups. */
function groups(text: string): bigint[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const out: bigint[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? '';
    if (i === parts.length - 1 && part.includes('.')) {
      const v4 = parseV4(part);
      if (v4 === undefined) return undefined;
      out.push(v4 >> 16n, v4 & 0xffffn);
    } else if (HEX_GROUP.test(part)) {
      out.push(BigInt(`0x${part}`));
    } else {
      return undefined;
    }
  }
  return out;
}

function parseV6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!head || !tail) return undefined;
  const total = head.length + tail.length;
  if (halves.length === 2 ? total > 7 : total !== 8) return undefined;
  const all = [...head, ...new Array<bigint>(8 - total).fill(0n), ...tail];
  return all.reduce((acc, g) => (acc << 16n) | g, 0n);
}

/** Parses a textual IP address, or returns undefined when the text is not one. */
export function parseIp(text: string): IpAddress | undefined {
  if (text.length > 64) return undefined;
  const v4 = parseV4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  if (!text.includes(':')) return undefined;
  const v6 = parseV6(text);
  return v6 === undefined ? undefined : { family: 6, value: v6 };
}

/**
 * Parses `address/bits`. Host bits may be set (`10.0.0.7/24`): the network is found by masking,
 * as AWS does. Throws an Error whose message is AWS's reason.
 */
export function parseCidr(text: string): CidrRange {
  const parts = text.split('/');
  if (parts.length !== 2) throw new Error("Malformed CIDR, one '/' required");
  const [ipText = '', bitsText = ''] = parts;
  if (!/^\d{1,3}$/.test(bitsText)) throw new Error('Malformed CIDR, mask bits must be an integer');
  const ip = parseIp(ipText);
  if (!ip) throw new Error(`Nonstandard IP address: ${ipText}`);
  const width = ip.family === 4 ? 32 : 128;
  const bits = Number(bitsText);
  if (bits > width) throw new Error(`Malformed CIDR, mask bits must be between 0 and ${width}`);
  const hostBits = BigInt(width - bits);
  const hostMask = (1n << hostBits) - 1n;
  const low = ip.value & ~hostMask;
  return { family: ip.family, low, high: low | hostMask };
}

/** True when `text` is an address of the range's family inside it (bounds inclusive). */
export function inCidr(range: CidrRange, text: string): boolean {
  const ip = parseIp(text);
  return ip !== undefined && ip.family === range.family && ip.value >= range.low && ip.value <= range.high;
}
