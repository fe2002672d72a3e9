"""Read one stream over SSE the way a Python service would, with a token minted by
examples/python/stream_token.py. Usage: read_stream.py BASE_URL SECRET_FILE STREAM_ID.
Prints {"text": ..., "status": ...} once the stream's `end` frame arrives; exits 1 on a gap
or a refusal. Run by tests/demo/producer.test.mjs."""
import json, sys, urllib.parse, urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))
from stream_token import sign_stream_token  # noqa: E402

base, secret_file, stream_id = sys.argv[1:4]
token = sign_stream_token(Path(secret_file).read_bytes(), stream_id, ttl_seconds=120)
query = urllib.parse.urlencode({"streamId": stream_id, "from": 0, "token": token})
text = []
length = 0  # UTF-16 code units, the contract's offsets
with urllib.request.urlopen(f"{base}/api/stream?{query}", timeout=60) as response:
    for raw in response:
        line = raw.decode("utf-8").rstrip("\n")
        if not line.startswith("data:"):
            continue
        frame = json.loads(line[5:])
        if frame["type"] == "chunk":
            if frame["from"] != length:
                sys.exit(f"gap: chunk from {frame['from']} at {length}")
            text.append(frame["text"])
            length = frame["seq"]
        elif frame["type"] == "end":
            print(json.dumps({"text": "".join(text), "status": frame["status"]}))
            sys.exit(0)
        elif frame["type"] in ("stale", "absent"):
            sys.exit(f"stopped: {frame['type']}")
sys.exit("the stream ended without an end frame")
