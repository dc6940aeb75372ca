"""The ``/metrics`` body: the per-quota figures written as text directly, the rest encoded by
prometheus_client.

At 10,000 quotas the seven per-quota families hold some 200,000 series (a figure, a quota, a
resource each: 26.6 MB of text). prometheus_client builds a sample and a label dict for each,
then checks and escapes every label name and value of every sample again: one scrape of the
cluster-scale benchmark's 10,000 quotas took 5.1 s of CPU, in a worker thread, but one that shares
the interpreter with the event loop's thread. Here a quota's labels are escaped once a scrape, a
(resource, value) pair is formatted once a scrape, and each series is one string concatenation.

The text is the same exposition as prometheus_client's (``Metrics.registry`` keeps every family,
figures included, for ``generate_latest`` and the tests, which parse both and compare them): the
family's ``# HELP``/``# TYPE`` lines come from the scraper's own encoder (text 0.0.4 or
OpenMetrics, whichever the ``Accept`` header chose), the sample lines are alike in both formats
for gauges, label names in sorted order and values as prometheus_client writes floats; an
OpenMetrics body ends with its ``# EOF`` line after the figures. The body is a list of chunks of
a few hundred kilobytes, never one 26.6 MB string: joining, encoding or concatenating that holds
the interpreter's lock for 20-30 ms each time, the event loop's thread waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from elasticquota.controller.metrics.collectors import (
    QuotaCollector,
    display_value,
    figure_help,
    quota_figure,
)
from elasticquota.controller.metrics.names import QUOTA_FIGURES, QUOTA_LABELS, resource_unit
from elasticquota.core.solve.results import QuotaResult

Encoder = Callable[[Collector], bytes]

OPENMETRICS_TYPE = "application/openmetrics-text"
EOF = b"# EOF\n"
#: prometheus_client's float text (Go's: ``+Inf``, ``1.7179869184e+010``), typed.
go_float: Callable[[float], str] = floatToGoString


class _Only(Collector):
    """One family as a collector: what the scraper's encoder takes."""

    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> Iterable[Metric]:
        return [self._family]


def label_value(text: str) -> str:
    """A label value escaped as the exposition formats want it (backslash, newline, quote)."""
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _QuotaLabels:
    """The label text of one quota's series, by resource: ``{namespace=...,unit="..."} ``."""

    __slots__ = ("_by_resource", "_head", "_tree")

    def __init__(self, result: QuotaResult) -> None:
        namespace, parent = label_value(result.namespace), label_value(result.parent)
        self._head = (
            f'{{namespace="{namespace}",parent="{parent}",quota="{label_value(result.name)}",'
        )
        self._tree = label_value(result.tree)
        self._by_resource: dict[str, str] = {}

    def of(self, resource: str) -> str:
        text = self._by_resource.get(resource)
        if text is None:
            name, unit = label_value(resource), resource_unit(resource)
            text = f'{self._head}resource="{name}",tree="{self._tree}",unit="{unit}"}} '
            self._by_resource[resource] = text
        return text


class _Values:
    """Each (resource, engine units) pair as the text of its value, formatted once (None: no
    series: the "no limit" sentinels)."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, int], str | None] = {}

    def text(self, resource: str, units: int) -> str | None:
        key = (resource, units)
        if key not in self._texts:
            value = display_value(resource, units)
            self._texts[key] = None if value is None else go_float(value)
        return self._texts[key]


def _sample_lines(
    name: str,
    field: str,
    quotas: list[tuple[QuotaResult, _QuotaLabels]],
    values: _Values,
) -> Iterator[str]:
    for result, labels in quotas:
        figures = quota_figure(result, field)
        for resource in sorted(figures):
            text = values.text(resource, figures[resource])
            if text is not None:
                yield f"{name}{labels.of(resource)}{text}\n"


#: Lines of text joined and encoded at a time: the interpreter's lock is held throughout one join
#: or encoding, and the whole exposition at once (26.6 MB at 10,000 quotas) held it for 20-30 ms
#: at each of its join, its encoding and its concatenation, stalling the event loop's thread.
LINES_AT_ONCE = 4096


def in_chunks(lines: Iterable[str]) -> Iterator[bytes]:
    """``lines`` encoded, ``LINES_AT_ONCE`` at a time (some 500 kB)."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == LINES_AT_ONCE:
            yield "".join(batch).encode()
            batch = []
    if batch:
        yield "".join(batch).encode()


def figures_chunks(collector: QuotaCollector, encode: Encoder) -> Iterator[bytes]:
    """The per-quota families of this scrape (``collector``'s results), each headed by the lines
    ``encode`` writes for it, in chunks."""
    quotas = [(result, _QuotaLabels(result)) for result in collector.shown_results()]
    values = _Values()
    for name, (field, _) in QUOTA_FIGURES.items():
        family = GaugeMetricFamily(name, figure_help(name), labels=QUOTA_LABELS)
        yield encode(_Only(family)).removesuffix(EOF)
        yield from in_chunks(_sample_lines(name, field, quotas, values))


def exposition(
    served: Collector, figures: QuotaCollector | None, accept: str
) -> tuple[list[bytes], str]:
    """The ``/metrics`` body for a scraper that sent ``accept``, in chunks, and its content type:
    ``served`` (every family but the per-quota figures) encoded by prometheus_client, then
    ``figures`` (none before the metrics watch a state)."""
    encode, content_type = choose_encoder(accept)
    body = encode(served)
    quotas = [] if figures is None else figures_chunks(figures, encode)
    if not content_type.startswith(OPENMETRICS_TYPE):
        return [body, *quotas], content_type
    return [body.removesuffix(EOF), *quotas, EOF], content_type
