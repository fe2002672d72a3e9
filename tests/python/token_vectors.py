"""examples/python/stream_token.py against the tokens Rust mints (tests/vectors/token.json):
byte-identical for every case. Run by scripts/test-server.sh."""
import json, sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "examples" / "python"))
from stream_token import sign_stream_token  # noqa: E402

cases = json.loads((root / "tests" / "vectors" / "token.json").read_text("utf-8"))["sign"]
assert len(cases) >= 20, len(cases)
for case in cases:
    got = sign_stream_token(case["secret"].encode("utf-8"), case["streamId"],
                            user_id=case["userId"], expires_at=case["expiresAt"])
    assert got == case["token"], (case, got)
print(f"python token vectors: {len(cases)} ok")
