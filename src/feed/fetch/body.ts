// Reads a response body: decompresses gzip/br/deflate by streaming and stops as soon as the decoded cap is passed.
import { createHash } from 'node:crypto';
import { Readable, pipeline } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';
import type { Transform } from 'node:stream';

/** A body the fetcher refuses: too large after decoding, an unknown coding, or corrupt compressed data. */
export class BodyError extends Error {
  readonly reason: 'too_large' | 'unsupported_encoding' | 'corrupt';
  constructor(reason: BodyError['reason'], message: string) {
    super(message);
    this.name = 'BodyError';
    this.reason = reason;
  }
}

export type BodyRead = { bytes: Uint8Array; hash: string; rawBytes: number };

/** The first buffer for a body of unknown length; it doubles (up to the cap) as the body grows. */
const FIRST_BUFFER_BYTES = 64 * 1024;

/** Decoded bytes and their sha256 hex; throws BodyError (cap, coding) or the stream's own error (stall, reset).
 *  The source is always destroyed or fully consumed when this settles. The bytes are read into one buffer of their
 *  own (sized from Content-Length when the body is not compressed, else doubling up to the cap), never a list of
 *  chunks concatenated at the end, and their ArrayBuffer can be handed to a worker thread as it is. */
export async function readBody(
  source: Readable,
  contentEncoding: string | null,
  maxBytes: number,
  contentLength: number | null = null,
): Promise<BodyRead> {
  const coding = normalizeCoding(contentEncoding);
  if (coding === null) {
    discard(source);
    throw new BodyError(
      'unsupported_encoding',
      `unsupported content-encoding "${contentEncoding ?? ''}"`,
    );
  }
  const counter = { raw: 0 };
  const hash = createHash('sha256');
  const known = coding === 'identity' && contentLength !== null && contentLength <= maxBytes;
  let buffer = newBuffer(known ? contentLength : Math.min(FIRST_BUFFER_BYTES, maxBytes));
  let total = 0;
  const decoded = await decodedStream(source, coding, counter);
  try {
    for await (const chunk of decoded) {
      const buf = chunk as Buffer;
      if (total + buf.length > maxBytes)
        throw new BodyError('too_large', `response exceeds ${formatBytes(maxBytes)}`);
      hash.update(buf);
      if (total + buf.length > buffer.length)
        buffer = grown(buffer, total, total + buf.length, maxBytes);
      buffer.set(buf, total);
      total += buf.length;
    }
  } catch (err) {
    throw isZlibError(err)
      ? new BodyError('corrupt', `unable to decode ${coding} body: ${(err as Error).message}`)
      : err;
  } finally {
    discard(decoded);
    discard(source);
  }
  return { bytes: buffer.subarray(0, total), hash: hash.digest('hex'), rawBytes: counter.raw };
}

/** A buffer of its own (not a slice of Node's shared pool), so its ArrayBuffer can be transferred. */
function newBuffer(size: number): Uint8Array {
  return new Uint8Array(new ArrayBuffer(size));
}

/** A copy of the first `used` bytes of `buffer` into one at least `needed` long: double, at most `maxBytes`. */
function grown(buffer: Uint8Array, used: number, needed: number, maxBytes: number): Uint8Array {
  const next = newBuffer(Math.min(maxBytes, Math.max(needed, buffer.length * 2)));
  next.set(buffer.subarray(0, used));
  return next;
}

/** Destroys a stream we stopped reading; undici then emits an abort error nobody needs to hear about. */
function discard(stream: Readable): void {
  if (stream.destroyed) return;
  stream.on('error', () => {});
  stream.destroy();
}

type Coding = 'identity' | 'gzip' | 'br' | 'deflate';

/** One supported content coding (RFC 9110 §8.4.1), or null; stacked codings are refused as no feed server uses them. */
function normalizeCoding(value: string | null): Coding | null {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'identity') return 'identity';
  if (v === 'gzip' || v === 'x-gzip') return 'gzip';
  if (v === 'br' || v === 'deflate') return v;
  return null;
}

/** The decoded stream; peeks at the first raw chunk so an empty body needs no decoder and "deflate" can be
 *  told apart as zlib-wrapped (RFC 1950, what the spec means) or raw (what some servers send). */
async function decodedStream(
  source: Readable,
  coding: Coding,
  counter: { raw: number },
): Promise<Readable> {
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await it.next();
  if (first.done) return Readable.from([]);
  counter.raw += first.value.length;
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      yield first.value as Buffer;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        counter.raw += next.value.length;
        yield next.value;
      }
    } finally {
      discard(source);
    }
  }
  const raw = Readable.from(await rest(), { objectMode: false });
  if (coding === 'identity') return raw;
  const decoder = makeDecoder(coding, first.value);
  // pipeline destroys both streams on error or early exit, so a bomb stops decompressing when we stop reading.
  return pipeline(raw, decoder, () => {});
}

function makeDecoder(coding: Exclude<Coding, 'identity'>, head: Buffer): Transform {
  if (coding === 'gzip') return createGunzip();
  if (coding === 'br') return createBrotliDecompress();
  return looksLikeZlib(head) ? createInflate() : createInflateRaw();
}

/** A zlib header: compression method 8 and a header checksum divisible by 31 (RFC 1950 §2.2). */
function looksLikeZlib(head: Buffer): boolean {
  if (head.length < 2) return true;
  const cmf = head[0] ?? 0;
  const flg = head[1] ?? 0;
  return (cmf & 0x0f) === 8 && ((cmf << 8) | flg) % 31 === 0;
}

function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    (code.startsWith('Z_') || code.startsWith('ERR_BROTLI') || code === 'ERR__ERROR')
  );
}

/** "15 MiB", "512 KiB" or "100 bytes" for messages. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}
