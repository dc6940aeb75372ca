"""What the API server was asked during a phase: its own request counters
(``apiserver_request_total``) and the bytes of its answers (``apiserver_response_sizes_sum``),
read from its ``/metrics`` before and after, by verb and resource. A phase whose API server spends
more CPU than another's is then told apart by what it was asked, not guessed at. The benchmark's
own requests are counted too, the same in every run: its quota mirror's watch and, once every
quota matched, the dump that confirms it (at 100,000 pods the 50 pages of ``LIST pods`` and the 6
of ``LIST elasticquotas``; the operator's own lists of the watch cache are one request a kind)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from scalebench.kube import Kube

#: ``name{labels} value`` of a Prometheus text exposition.
SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')
#: The (verb, resource) pairs shown, most requests first.
SHOWN = 8


def request_key(labels: dict[str, str]) -> str:
    """``LIST pods``, ``PATCH elasticquotas/status``, ``WATCH leases``."""
    resource = labels.get("resource", "") or "(none)"
    if labels.get("subresource"):
        resource += "/" + labels["subresource"]
    return f"{labels.get('verb', '?')} {resource}"


@dataclass(frozen=True)
class RequestCounts:
    """Requests and answer bytes by ``request_key`` so far."""

    requests: Counter[str]
    answer_bytes: Counter[str]

    @classmethod
    def parse(cls, text: str) -> RequestCounts:
        requests: Counter[str] = Counter()
        answer_bytes: Counter[str] = Counter()
        for line in text.splitlines():
            match = SAMPLE.match(line)
            if match is None:
                continue
            name, labels, value = match.groups()
            if name == "apiserver_request_total":
                requests[request_key(dict(LABEL.findall(labels)))] += int(float(value))
            elif name == "apiserver_response_sizes_sum":
                answer_bytes[request_key(dict(LABEL.findall(labels)))] += int(float(value))
        return cls(requests, answer_bytes)

    def since(self, earlier: RequestCounts) -> RequestCounts:
        return RequestCounts(
            self.requests - earlier.requests, self.answer_bytes - earlier.answer_bytes
        )

    def line(self) -> str:
        """``requests=N answer_mb=M | LIST pods 2 (31.0 MB) | ...``: the busiest pairs."""
        shown = " | ".join(
            f"{key} {count} ({self.answer_bytes[key] / 1e6:.1f} MB)"
            for key, count in self.requests.most_common(SHOWN)
        )
        total_mb = sum(self.answer_bytes.values()) / 1e6
        return f"requests={sum(self.requests.values())} answer_mb={total_mb:.1f} | {shown}"


async def request_counts(kube: Kube) -> RequestCounts:
    """The API server's request counters now."""
    return RequestCounts.parse(await kube.text("/metrics"))
