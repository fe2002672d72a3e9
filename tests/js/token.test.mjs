// `twoplane/token` (signStreamToken, Node only) against the tokens Rust mints
// (tests/vectors/token.json, written by crates/twoplane-server/examples/gen_token_vectors.rs):
// byte-identical tokens for every case, and refusals of arguments a token cannot carry.
// Independent of BACKEND (the signer uses node:crypto only).

import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/token.json', import.meta.url), 'utf8'));

test('signStreamToken mints exactly the tokens Rust mints', () => {
  assert.ok(vectors.sign.length >= 20);
  for (const v of vectors.sign) {
    const token = signStreamToken({ secret: v.secret, streamId: v.streamId, expiresAt: v.expiresAt, userId: v.userId });
    assert.equal(token, v.token, JSON.stringify(v));
    // The secret as bytes gives the same token.
    const bytes = new TextEncoder().encode(v.secret);
    assert.equal(signStreamToken({ secret: bytes, streamId: v.streamId, expiresAt: v.expiresAt, userId: v.userId }), v.token);
  }
});

test('a changed claim or secret changes the token', () => {
  const v = vectors.sign[1];
  const base = { secret: v.secret, streamId: v.streamId, expiresAt: v.expiresAt, userId: v.userId };
  assert.notEqual(signStreamToken({ ...base, streamId: `${v.streamId}x` }), v.token);
  assert.notEqual(signStreamToken({ ...base, expiresAt: v.expiresAt + 1 }), v.token);
  assert.notEqual(signStreamToken({ ...base, secret: `${v.secret}x` }), v.token);
});

test('ttlSeconds counts from now', () => {
  const now = Math.floor(Date.now() / 1000);
  const token = signStreamToken({ secret: 'k'.repeat(32), streamId: 's', ttlSeconds: 60 });
  const claims = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));
  assert.equal(claims.sid, 's');
  assert.ok(claims.exp >= now + 60 && claims.exp <= now + 62, String(claims.exp));
});

test('arguments a token cannot carry are refused with a kind', () => {
  const bad = [
    { secret: 42, streamId: 's' },
    { secret: 'k', streamId: '\uD800' },
    { secret: 'k', streamId: 7 },
    { secret: 'k', streamId: 's', userId: '\uDC00x' },
    { secret: 'k', streamId: 's', expiresAt: -1 },
    { secret: 'k', streamId: 's', expiresAt: 1.5 },
    { secret: 'k', streamId: 's', expiresAt: 2 ** 53 },
  ];
  for (const args of bad) {
    assert.throws(() => signStreamToken(args), (e) => e.kind === 'invalid_argument', JSON.stringify(args));
  }
});
