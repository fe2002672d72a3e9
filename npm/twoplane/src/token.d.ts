/** Options of {@link signStreamToken}. */
export interface SignStreamTokenOptions {
  /** The server's read-token secret (`--read-token-secret-file`), as text or bytes. */
  secret: string | Uint8Array;
  /** The stream (message id) the token reads. */
  streamId: string;
  /** Unix time in seconds from which the token is refused. */
  expiresAt?: number;
  /** Seconds from now, when `expiresAt` is not given. Default 300. */
  ttlSeconds?: number;
  /** The application's user, carried in the token. */
  userId?: string | null;
}

/** Mint a read token (Node only: it uses node:crypto). Throws a TwoplaneError `invalid_argument`. */
export function signStreamToken(options: SignStreamTokenOptions): string;
