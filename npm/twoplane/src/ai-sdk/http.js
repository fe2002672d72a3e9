// What the producer (producer.js) and the transport (transport.js, follow.js) of twoplane/ai-sdk
// both write into a request to `twoplane serve`: a path segment, a base URL without its trailing
// slashes, and the bearer token header, present only when there is a token.

/** A stream or chat id as one path segment. */
export const segment = (s) => encodeURIComponent(s);

/** A base URL (or a route) with its trailing slashes cut, so a path can be appended. */
export const trimSlash = (s) => String(s ?? '').replace(/\/+$/, '');

/** `{ authorization: 'Bearer <token>' }`, or no header at all without a token. */
export const bearer = (token) => (token ? { authorization: `Bearer ${token}` } : {});
