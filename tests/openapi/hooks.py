"""Checks of our own for schemathesis (loaded through SCHEMATHESIS_HOOKS by scripts/test-ops.sh).

A refusal must say what it is: every 4xx and 5xx answer of `twoplane serve` is JSON with a
stable snake_case `kind` (docs/openapi.yaml, components.schemas.Refusal). A 204 and every 2xx
carry what the description says; schemathesis's own checks see to that.
"""

import json
import re

import schemathesis

KIND = re.compile(r"^[a-z][a-z0-9_]*$")


@schemathesis.check
def refusal_has_kind(ctx, response, case):
    if response.status_code < 400:
        return None
    media = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
    if media != "application/json":
        raise AssertionError(f"a {response.status_code} refusal is {media or 'untyped'}, not JSON with a kind")
    try:
        body = json.loads(response.content)
    except ValueError as e:
        raise AssertionError(f"a {response.status_code} refusal is not valid JSON: {e}")
    kind = body.get("kind") if isinstance(body, dict) else None
    if not isinstance(kind, str) or not KIND.match(kind):
        raise AssertionError(f"a {response.status_code} refusal has no snake_case kind: {body!r}")
    return None


# A streaming body of events is lines of text on the wire: sent as the text schemathesis draws.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
