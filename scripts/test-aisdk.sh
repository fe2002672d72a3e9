#!/usr/bin/env bash
# The Vercel AI SDK against twoplane, judged by the SDK's own code (tests/ai-sdk, its own npm
# package pinning `ai` 5, 6 and 7 side by side): the recorded fixtures, the resume behaviour of
# each major's `Chat`, and the core's UI message stream module (`twoplane_core::ui`, what the
# server ingests and serves) over every fixture cut at every chunk and joined at every event:
# `readUIMessageStream` must build from our replay and tail exactly the message it builds from
# the original stream. Then the npm package's `twoplane/ai-sdk` entry over `ai` 5 and 7 (6 too
# when TWOPLANE_AISDK_MAJORS says so): its types, the producer and the ChatTransport against the
# built `twoplane serve` in Node, and `useChat({ resume: true })` reloaded mid-answer in Chromium;
# then, in ai 5, 6 and 7, continuations (a client tool, a tool approval) with and without reloads,
# in Node and in Chromium.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

say "aisdk: the recorded fixtures and each major's resume (tests/ai-sdk: npm test)"
(cd tests/ai-sdk && npm test --silent)

say "aisdk: twoplane/ai-sdk's snapshot compaction, judged by each major's readUIMessageStream (compact.test.mjs)"
(cd tests/ai-sdk && node --test compact.test.mjs)

say "aisdk: the core's UI message stream module over every fixture, judged by readUIMessageStream"
cases=$(mktemp "${TMPDIR:-/tmp}/twoplane-ui-cases.XXXXXX")
trap 'rm -f "$cases"' EXIT
cargo run -q -p twoplane-core --example ui_cases -- tests/ai-sdk/fixtures "$cases"
(cd tests/ai-sdk && node check-egress.mjs "$cases")

majors=${TWOPLANE_AISDK_MAJORS:-5 7}

say "aisdk: twoplane/ai-sdk's types against ai ${majors// /, } (tsc --noEmit tests/ai-sdk/types)"
for m in $majors; do
  [ -f "tests/ai-sdk/types/tsconfig.$m.json" ] || continue
  tests/ai-sdk/node_modules/.bin/tsc -p "tests/ai-sdk/types/tsconfig.$m.json"
done
echo "types: ok"

say "aisdk: cargo build --bin twoplane"
cargo build -q -p twoplane-server --bin twoplane

for m in $majors; do
  say "aisdk: twoplane/ai-sdk with ai $m: producer and ChatTransport in Node, useChat in Chromium"
  (cd tests/ai-sdk && TWOPLANE_AI=$m TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium \
    node --import ./lib/ai-alias.mjs --test --test-concurrency=1 twoplane.test.mjs browser.test.mjs)
done

# A message that goes on (client tools, tool approvals), against the SDK's own Chat and
# DefaultChatTransport, in every major (tool approvals from ai 6 on): in Node, then with pages
# killed at every point of the conversation, in Node (continue-reload) and through useChat in
# Chromium (browser-continue); a stream sealed `error` read live, resumed and from the store
# (error.test.mjs); and the code blocks of docs/ai-sdk.md run as written (docs.test.mjs).
for m in 5 6 7; do
  say "aisdk: continuations with ai $m: a client tool and a tool approval go on with the same message, reloaded or not, in Node and Chromium; the guide's code"
  (cd tests/ai-sdk && TWOPLANE_AI=$m TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium \
    node --import ./lib/ai-alias.mjs --test --test-concurrency=1 continue.test.mjs continue-reload.test.mjs browser-continue.test.mjs error.test.mjs docs.test.mjs)
done

# The oldest and the newest published release of each major in twoplane/ai-sdk's peer range
# (5.0.0, 6.0.0, 6.0.333, 7.0.0, 7.0.185; 5.0.277, the newest 5.x, is the pinned `5` above), with
# the SDK's own AbstractChat: the pages killed at every point (continue-reload). The releases
# before 5.0.233, 6.0.250 and 7.0.62 build a resume on the page's last message.
for m in 5old 6old 6last 7old 7last; do
  say "aisdk: continuations with ai $m (AbstractChat), the page killed at every point"
  (cd tests/ai-sdk && TWOPLANE_AI=$m TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" \
    node --import ./lib/ai-alias.mjs --test --test-concurrency=1 continue-reload.test.mjs)
done

# The AI SDK example (examples/ai-sdk-chat, issue #24), started exactly as its README says
# (scripts/example-ai-sdk.sh, which installs and builds what it needs) and driven in Chromium with
# tests/browser's helper and its playwright-core: reloaded mid-answer it renders what an
# undisturbed page renders, each part once; Stop cancels; SIGINT stops everything it started.
say "aisdk: examples/ai-sdk-chat through scripts/example-ai-sdk.sh, reloaded mid-answer in Chromium"
CHROMIUM_PATH=/usr/bin/chromium node --test examples/ai-sdk-chat/test/reload.test.mjs
