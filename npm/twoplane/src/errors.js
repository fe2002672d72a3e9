// The one error class of the package. Every error the facade or a backend throws carries a stable
// snake_case `.kind` (the core's `ErrorKind::as_str`, plus nothing else), so callers branch on
// `err.kind` instead of parsing messages. Backends may throw any error with a `.kind`; the facade
// re-throws those as `TwoplaneError` so `instanceof` holds whichever backend answered.

export class TwoplaneError extends Error {
  constructor(kind, message, options) {
    super(message, options);
    this.name = 'TwoplaneError';
    this.kind = kind;
  }
}

/** `err` as a TwoplaneError when it carries a kind; anything else is returned unchanged. */
export function asTwoplaneError(err) {
  if (err instanceof TwoplaneError) return err;
  if (err !== null && typeof err === 'object' && typeof err.kind === 'string') {
    return new TwoplaneError(err.kind, String(err.message ?? err.kind), { cause: err });
  }
  return err;
}

/** `call(f)`: `f()`, with what it throws thrown as `convert(err)` makes it. Each backend wraps its
 *  binding's calls in one of these, so every error leaving it is a TwoplaneError with the core's
 *  kind. */
export function converting(convert) {
  return (f) => {
    try {
      return f();
    } catch (err) {
      throw convert(err);
    }
  };
}
