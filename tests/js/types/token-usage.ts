// Type check of `twoplane/token` (token.d.ts): compiled with `tsc --noEmit` by
// scripts/test-node.sh, never run.
import { signStreamToken, type SignStreamTokenOptions } from '../../../npm/twoplane/src/token.js';

const options: SignStreamTokenOptions = { secret: 'k'.repeat(32), streamId: 'm-1', ttlSeconds: 60 };
const a: string = signStreamToken(options);
const b: string = signStreamToken({ secret: new Uint8Array(32), streamId: 'm-1', expiresAt: 2_000_000_000, userId: 'u' });
const c: string = signStreamToken({ secret: 'k', streamId: 'm', userId: null });
// @ts-expect-error: the stream id is required
signStreamToken({ secret: 'k' });
// @ts-expect-error: an expiry is a number of seconds
signStreamToken({ secret: 'k', streamId: 'm', expiresAt: '2030' });
export const tokens = [a, b, c];
