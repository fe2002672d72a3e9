#!/usr/bin/env bash
# The Vercel AI SDK against twoplane, judged by the SDK's own code (tests/ai-sdk, its own npm
# package pinning `ai` 5, 6 and 7 side by side): the recorded fixtures, the resume behaviour of
# each major's `Chat`, and the core's UI message stream module (`twoplane_core::ui`, what the
# server ingests and serves) over every fixture cut at every chunk and joined at every event:
# `readUIMessageStream` must build from our replay and tail exactly the message it builds from
# the original stream.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

npm_ci "$ROOT/tests/ai-sdk"

say "aisdk: the recorded fixtures and each major's resume (tests/ai-sdk: npm test)"
(cd tests/ai-sdk && npm test --silent)

say "aisdk: the core's UI message stream module over every fixture, judged by readUIMessageStream"
cases=$(mktemp "${TMPDIR:-/tmp}/twoplane-ui-cases.XXXXXX")
trap 'rm -f "$cases"' EXIT
cargo run -q -p twoplane-core --example ui_cases -- tests/ai-sdk/fixtures "$cases"
(cd tests/ai-sdk && node check-egress.mjs "$cases")
