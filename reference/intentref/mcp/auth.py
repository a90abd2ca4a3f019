"""Who is calling over HTTP: bearer tokens checked by the MCP SDK's resource-server parts.

Two ``TokenVerifier``s for the SDK's bearer middleware (D-MCP-030): static tokens a team
shares, stored as SHA-256 digests (``--auth-tokens``), and JWT access tokens from an
authorization server, checked against a JWKS, an issuer and this server's audience
(``--auth-jwks``).  Either way the verified token names a principal (its ``subject``),
which is the identity the fair share, the rate limit and job ownership key on (D-MCP-031).
Nothing here logs or returns a token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any, Final

import anyio
import jwt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import Scope

TOKENS_KEYS: Final = frozenset({"tokens"})
TOKEN_KEYS: Final = frozenset({"principal", "sha256"})
_HEX_DIGEST: Final = re.compile(r"[0-9a-fA-F]{64}")


class AuthFault(ValueError):
    """A malformed authorization file: where in it (a JSON Pointer) and what is wrong."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer


def principal_of(scope: Scope) -> str | None:
    """The principal the SDK's bearer middleware verified for this request, or None without authorization."""
    user = scope.get("user")
    return user.access_token.subject if isinstance(user, AuthenticatedUser) else None


def _principal_token(token: str, principal: str, **extra: Any) -> AccessToken:
    return AccessToken(token=token, client_id=principal, subject=principal, scopes=[], **extra)


class StaticTokens:
    """``--auth-tokens``: each principal's token known only by its SHA-256 digest (D-MCP-030)."""

    def __init__(self, digests: list[tuple[bytes, str]]) -> None:
        self._digests = digests

    @classmethod
    def parse(cls, raw: bytes) -> StaticTokens:
        """The file ``{"tokens": [{"principal": NAME, "sha256": HEX}, ...]}``, or AuthFault."""
        try:
            document = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise AuthFault("", "not JSON text in UTF-8.") from None
        if not isinstance(document, dict) or set(document) != TOKENS_KEYS or not isinstance(document["tokens"], list):
            raise AuthFault("", 'the file must be {"tokens": [{"principal": NAME, "sha256": HEX}, ...]} and nothing else.')
        if not document["tokens"]:
            raise AuthFault("/tokens", "no tokens: nobody could call the server.")
        digests: list[tuple[bytes, str]] = []
        for index, entry in enumerate(document["tokens"]):
            where = f"/tokens/{index}"
            if not isinstance(entry, dict) or set(entry) != TOKEN_KEYS:
                raise AuthFault(where, 'each token must be {"principal": NAME, "sha256": HEX} and nothing else.')
            principal, digest = entry["principal"], entry["sha256"]
            if not isinstance(principal, str) or not principal.strip():
                raise AuthFault(f"{where}/principal", "the principal must be a non-empty string.")
            if not isinstance(digest, str) or not _HEX_DIGEST.fullmatch(digest):
                raise AuthFault(f"{where}/sha256", "sha256 must be 64 hexadecimal digits, the token's SHA-256.")
            if any(hmac.compare_digest(known, bytes.fromhex(digest)) for known, _ in digests):
                raise AuthFault(f"{where}/sha256", "this digest is already listed: one token, one principal.")
            digests.append((bytes.fromhex(digest), principal))
        return cls(digests)

    async def verify_token(self, token: str) -> AccessToken | None:
        # Starlette decodes headers as Latin-1, so this re-encoding is the header's own bytes:
        # the token's UTF-8 text.  Every digest is compared, so the time taken does not say
        # which entry matched or how much of one did.
        digest = hashlib.sha256(token.encode("latin-1", "replace")).digest()
        found = None
        for known, principal in self._digests:
            if hmac.compare_digest(known, digest):
                found = principal
        return None if found is None else _principal_token(token, found)


class JwtTokens:
    """``--auth-jwks``: a JWT signed by a key of the JWKS, from the issuer, for this audience (D-MCP-032).

    The algorithm is the key's, never the token's header's; ``exp``, ``iss``, ``aud`` and
    ``sub`` are required, and ``sub`` is the principal.
    """

    def __init__(self, jwks: jwt.PyJWKSet | str, issuer: str, audience: str) -> None:
        """``jwks`` is the key set itself (read from a file at start) or the URL it is fetched from."""
        self._issuer = issuer
        self._audience = audience
        self._keys = jwks if isinstance(jwks, jwt.PyJWKSet) else None
        # Fetched on first use and cached; an unknown kid refetches at most once per the
        # client's cooldown, so forged kids cannot make this server flood the authorization server.
        self._client = jwt.PyJWKClient(jwks, cache_keys=True) if isinstance(jwks, str) else None

    def _key(self, token: str) -> jwt.PyJWK:
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token)
        assert self._keys is not None
        kid = jwt.get_unverified_header(token).get("kid")
        if kid is None and len(self._keys.keys) == 1:
            return self._keys.keys[0]
        try:
            return self._keys[str(kid)]
        except KeyError:
            raise jwt.PyJWKClientError("no key for this kid") from None

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self._key(token) if self._client is None else await anyio.to_thread.run_sync(self._key, token)
            claims = jwt.decode(
                token,
                key,
                algorithms=[key.algorithm_name],
                audience=self._audience,
                issuer=self._issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, ValueError):
            return None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            return None
        return _principal_token(token, subject, expires_at=int(claims["exp"]), resource=self._audience, claims={"iss": self._issuer})
