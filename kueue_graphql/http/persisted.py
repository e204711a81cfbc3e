"""Persisted queries: Apollo's automatic persisted queries (APQ) and the operator's trusted
documents (`--trusted-documents FILE`).

A request names a document by `extensions.persistedQuery = {"version": 1, "sha256Hash": HEX}`
(the SHA-256 of the document's text, lowercase hex). APQ: a hash-only request whose hash this
server has not seen is answered `PERSISTED_QUERY_NOT_FOUND` (HTTP 200, as Apollo's clients
expect), and the client sends the document with its hash; the hash is checked against the
document and the pair kept in a store bounded in bytes (least recently used out first).
Trusted documents: only the documents of the operator's file run; any other document, or a
hash not in the file, is refused before it is parsed.

Every request is already within the size cap (http/document_size.py) when it gets here, so
hashing it is bounded too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from cachetools import LRUCache

from kueue_graphql.core.errors import ErrorCode

PERSISTED_QUERY_VERSION = 1
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# A trusted-documents file bigger than this is refused at start (a manifest of a few thousand
# operations is well below it).
MAX_TRUSTED_DOCUMENTS_FILE_BYTES = 32 * 1024 * 1024

HOW_TO_NAME = 'extensions.persistedQuery {"version": 1, "sha256Hash": "<sha256 hex>"}'


class PersistedQueryError(Exception):
    """A request refused by the persisted-query rules, before its document is parsed."""

    def __init__(self, status: int, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class TrustedDocumentsError(Exception):
    """The trusted-documents file cannot be served (the server refuses to start)."""


def sha256_hex(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def persisted_query_hash(extensions: object) -> str | None:
    """The hash `extensions.persistedQuery` names, None when there is none;
    PersistedQueryError (400) when it is not `{"version": 1, "sha256Hash": HEX}`."""
    if not isinstance(extensions, Mapping) or extensions.get("persistedQuery") is None:
        return None
    named = extensions["persistedQuery"]
    if not isinstance(named, Mapping):
        raise _bad_request(f"extensions.persistedQuery must be an object: {HOW_TO_NAME}")
    if named.get("version") != PERSISTED_QUERY_VERSION:
        raise _bad_request(
            f"unsupported persisted query version: send version {PERSISTED_QUERY_VERSION}"
        )
    sha = named.get("sha256Hash")
    if not isinstance(sha, str) or not SHA256_HEX.fullmatch(sha):
        raise _bad_request(
            "extensions.persistedQuery.sha256Hash must be the document's SHA-256 as 64 "
            "lowercase hex digits"
        )
    return sha


def _bad_request(message: str) -> PersistedQueryError:
    return PersistedQueryError(400, ErrorCode.BAD_REQUEST, message)


class AutomaticPersistedQueries:
    """Apollo's APQ over a store of at most `max_bytes` characters of documents (0: APQ off,
    answered `PERSISTED_QUERY_NOT_SUPPORTED`, which makes Apollo's link stop sending hashes)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._store: LRUCache[str, str] | None = (
            LRUCache(maxsize=max_bytes, getsizeof=len) if max_bytes > 0 else None
        )

    def document(self, query: str | None, extensions: object) -> str | None:
        """The document to run: `query`, or the stored one its hash names."""
        sha = persisted_query_hash(extensions)
        if sha is None:
            return query
        if self._store is None:
            raise PersistedQueryError(
                200,
                ErrorCode.PERSISTED_QUERY_NOT_SUPPORTED,
                "PersistedQueryNotSupported: persisted queries are off on this server "
                "(--persisted-queries-max-bytes 0); send the query itself",
            )
        if query is None:
            stored = self._store.get(sha)
            if stored is None:
                raise PersistedQueryError(
                    200,
                    ErrorCode.PERSISTED_QUERY_NOT_FOUND,
                    "PersistedQueryNotFound: send the query with its hash",
                )
            return stored
        if sha256_hex(query) != sha:
            raise _bad_request("provided sha does not match query")
        if len(query) <= self.max_bytes:
            self._store[sha] = query
        return query


class TrustedDocuments:
    """Only the operator's documents run: named by their hash, or sent whole (then their hash
    must be in the file)."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.documents = dict(documents)

    def document(self, query: str | None, extensions: object) -> str | None:
        sha = persisted_query_hash(extensions)
        if sha is None:
            if query is None:
                return None
            sha = sha256_hex(query)
        trusted = self.documents.get(sha)
        if trusted is None:
            raise PersistedQueryError(
                400,
                ErrorCode.PERSISTED_QUERY_NOT_ALLOWED,
                "this server runs only the operator's trusted documents (--trusted-documents) "
                f"and this one is not among them: send a trusted document by its hash, "
                f"{HOW_TO_NAME}, or ask the operator to add yours",
            )
        if query is not None and query != trusted:
            raise _bad_request("provided sha does not match query")
        return trusted

    def allows(self, query: str) -> bool:
        return sha256_hex(query) in self.documents


def load_trusted_documents(path: Path, max_document_bytes: int) -> dict[str, str]:
    """The file's map {sha256 hex: document}; TrustedDocumentsError naming the first problem
    (not JSON, not such a map, a hash that is not the document's, a document over the size
    cap). Documents are checked against the schema by the caller (`check_documents`)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise TrustedDocumentsError(f"--trusted-documents {path}: {error.strerror}") from error
    if size > MAX_TRUSTED_DOCUMENTS_FILE_BYTES:
        raise TrustedDocumentsError(
            f"--trusted-documents {path}: over {MAX_TRUSTED_DOCUMENTS_FILE_BYTES} bytes"
        )
    try:
        parsed = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:
        raise TrustedDocumentsError(
            f"--trusted-documents {path}: not a JSON file ({type(error).__name__})"
        ) from error
    shape = 'a JSON object {"<sha256 hex>": "<document>", ...}'
    if not isinstance(parsed, dict) or not parsed:
        raise TrustedDocumentsError(f"--trusted-documents {path}: must be {shape}, not empty")
    for sha, document in parsed.items():
        where = f"--trusted-documents {path}: entry {sha[:80]!r}"
        if not SHA256_HEX.fullmatch(sha):
            raise TrustedDocumentsError(f"{where}: the key must be 64 lowercase hex digits")
        if not isinstance(document, str):
            raise TrustedDocumentsError(f"{where}: the value must be the document's text")
        if len(document.encode()) > max_document_bytes:
            raise TrustedDocumentsError(
                f"{where}: the document is over {max_document_bytes} bytes (--max-body-bytes)"
            )
        if sha256_hex(document) != sha:
            raise TrustedDocumentsError(f"{where}: the key is not the document's SHA-256")
    return parsed
