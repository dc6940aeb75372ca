"""The webhook server's certificate files, read again when they change and served from the next
TLS handshake on, the listening socket never closed.

Kopf's server restarts itself when its files change: it closes the port, waits for the reviews in
flight (up to aiohttp's shutdown timeout, a minute) and listens again, with a port picked anew when
none was set. Meanwhile the API server's connections are refused, and a webhook whose failure
policy is Fail rejects what it is asked about. Here the socket keeps the SSL context it was opened
with; that context's SNI callback (called for every ClientHello, with or without a server name)
hands each new connection the context of the newest files that load. Files that do not load (a
key that does not match its certificate, a file half replaced) are logged and the previous
certificate goes on until the files change again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)

#: What builds the server's SSL context from its settings: (CA bundle or None, context or None).
ContextBuilder = Callable[[], tuple[bytes | None, ssl.SSLContext | None]]


def files_digest(paths: Sequence[str]) -> str | None:
    """One hash of the files' contents (mounted Secrets keep their mtimes: only the content
    says); None while one cannot be read (a kubelet or a writer replacing it)."""
    hasher = hashlib.sha256()
    try:
        for path in paths:
            with open(path, "rb") as file:
                hasher.update(file.read())
    except OSError:
        return None
    return hasher.hexdigest()


class ServedCertificate:
    """The SSL context the listening socket holds, and the newest one each handshake is given.

    ``cadata`` is the CA bundle of the newest files (the webhooks' client configuration carries
    it); ``listening`` the context to open the socket with (None: plain HTTP).
    """

    def __init__(self, build: ContextBuilder, paths: Sequence[str]) -> None:
        self._build = build
        self._paths = tuple(paths)
        self.cadata, self.listening = build()
        self._newest = self.listening
        self._digest = files_digest(self._paths)
        if self.listening is not None and self._paths:
            self.listening.sni_callback = self._hand_newest

    def _hand_newest(self, connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
        if self._newest is not None and connection.context is not self._newest:
            connection.context = self._newest

    async def renewed(self, check_interval: float) -> None:
        """Return once changed files have loaded (served from then on); for ever without files
        (a self-signed certificate made in memory)."""
        if not self._paths:
            await asyncio.Event().wait()
        while not self._reloaded():
            await asyncio.sleep(check_interval)

    def _reloaded(self) -> bool:
        digest = files_digest(self._paths)
        if digest is None or digest == self._digest:
            return False
        self._digest = digest  # tried once per content: a broken one is logged once
        try:
            cadata, context = self._build()
        except (OSError, ssl.SSLError, ValueError) as error:
            logger.warning(
                "webhook server: the changed certificate files %s do not load, the previous "
                "certificate is served until they change again: %s",
                ", ".join(self._paths),
                error,
            )
            return False
        self.cadata, self._newest = cadata, context
        logger.info("webhook server: serving the renewed certificate of %s", self._paths[0])
        return True
