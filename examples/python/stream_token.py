"""Mint a twoplane read token with Python's standard library (docs/server.md, "Read tokens")."""
import base64, hashlib, hmac, json, time

def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

def sign_stream_token(secret: bytes, stream_id: str, ttl_seconds: int = 300, user_id=None, expires_at=None) -> str:
    claims = {"sid": stream_id, "exp": int(time.time()) + ttl_seconds if expires_at is None else expires_at}
    if user_id is not None:
        claims["uid"] = user_id
    payload = _b64(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    mac = hmac.new(secret.rstrip(b" \t\r\n"), payload.encode("ascii"), hashlib.sha256).digest()
    return payload + "." + _b64(mac)
