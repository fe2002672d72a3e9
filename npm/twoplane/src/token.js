// `twoplane/token`: mint read tokens in a Node server (node:crypto; not for browsers, which must
// never hold the secret).
//
// What it guarantees: the token is exactly the one `twoplane token` and the server's own minting
// produce for the same secret, stream id, expiry and user id (tests/js/token.test.mjs replays
// tests/vectors/token.json, which Rust writes). The format is documented in docs/server.md
// ("Read tokens"): base64url(JSON {"sid","exp"[,"uid"]}) "." base64url(HMAC-SHA256 over the first
// part).

import { createHmac } from 'node:crypto';
import { TwoplaneError } from './errors.js';

const MAX_EXP = Number.MAX_SAFE_INTEGER;

function wellFormed(s) {
  // A lone surrogate cannot be UTF-8, and the server compares ids as UTF-8 text.
  return typeof s === 'string' && !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function trimBytes(bytes) {
  let end = bytes.length;
  while (end > 0 && [0x20, 0x09, 0x0d, 0x0a].includes(bytes[end - 1])) end -= 1;
  return bytes.subarray(0, end);
}

/**
 * A read token for one stream. `secret`: the server's read-token secret (string or bytes);
 * `expiresAt`: unix seconds, or `ttlSeconds` from now (default 300); `userId`: optional, carried.
 */
export function signStreamToken({ secret, streamId, expiresAt, ttlSeconds = 300, userId } = {}) {
  if (typeof secret !== 'string' && !(secret instanceof Uint8Array)) {
    throw new TwoplaneError('invalid_argument', 'secret must be a string or a Uint8Array');
  }
  if (!wellFormed(streamId)) throw new TwoplaneError('invalid_argument', 'streamId must be a well-formed string');
  if (userId !== undefined && userId !== null && !wellFormed(userId)) {
    throw new TwoplaneError('invalid_argument', 'userId must be a well-formed string');
  }
  // Which bytes of a secret are the key is twoplane-token's rule (`secret_key`: without trailing
  // spaces, tabs, CRs and LFs); this is its JavaScript side, held to it by token.json, whose
  // secrets end in such bytes.
  const key = typeof secret === 'string' ? secret.replace(/[ \t\r\n]+$/, '') : trimBytes(secret);
  const exp = expiresAt ?? Math.floor(Date.now() / 1000) + ttlSeconds;
  if (!Number.isSafeInteger(exp) || exp < 0 || exp > MAX_EXP) {
    throw new TwoplaneError('invalid_argument', 'the expiry must be a non-negative integer number of unix seconds');
  }
  const claims = userId === undefined || userId === null ? { sid: streamId, exp } : { sid: streamId, exp, uid: userId };
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  const mac = createHmac('sha256', key).update(payload, 'ascii').digest('base64url');
  return `${payload}.${mac}`;
}
