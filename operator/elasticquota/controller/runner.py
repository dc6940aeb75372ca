"""``elastic-quota run``: the readers, the leader Lease, the reconcile loops, the probes, Kopf.

The cluster is read by the operator's own list-and-watch readers (``controller.ingest``), one per
kind. Kopf runs embedded (``kopf.operator``) for the admission webhooks, the login and the signals,
with a registry built here (nothing registers at import); so does the Prometheus registry
(``Metrics``), served at ``/metrics`` by the probes' server and fed by the loops, the webhooks and
the API client. Every replica reads and keeps memory current; the holder of the Lease writes, and
only while its Lease is fresh: the writers' API client is fenced by the elector's ``Fence``
(``kube.client``), the elector talks to the API server through a client of its own. The loops
write through one ``Cluster`` (``controller.cluster``), chosen here: the Kubernetes adapter on the
fenced client, or, with ``--dry-run``, one that sends nothing.
Kopf's own bookkeeping is switched off where it could touch objects we don't own: no peering (the
Lease does that job), no posting of Kopf's logs as Events, no resource handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import kopf
from kubernetes_asyncio import client

from elasticquota.controller.cluster import Cluster, DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.evictions import RateLimiter
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.ingest import Ingest
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.observability import heap
from elasticquota.controller.observability.health import health_app, serve
from elasticquota.controller.observability.loopprobe import StallWatchdog, probe_loop
from elasticquota.controller.reconcile.names import NameRecorder
from elasticquota.controller.reconcile.problems import SETTLE_SECONDS, ProblemReporter, Settling
from elasticquota.controller.reconcile.profiles import ProfileController
from elasticquota.controller.reconcile.reconciler import Reconciler
from elasticquota.controller.reconcile.reserved import keep_reserved_quotas
from elasticquota.controller.solving import use_one_solver_thread
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import Admission, configure_admission, register_webhooks
from elasticquota.controller.webhooks.certrotation import WebhookCertificates
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.client import make_api_client
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.errors import describe
from elasticquota.kube.fence import Fence
from elasticquota.kube.lease import LeaderElector
from elasticquota.kube.pods import supports_scheduling_gates
from elasticquota.kube.quotas import ensure_namespace
from elasticquota.numbacache import start_kernels
from elasticquota.settings import Settings

logger = logging.getLogger(__name__)

#: Seconds between two updates of the webhooks' quota catalog between requests.
CATALOG_FOLLOW_INTERVAL = 1.0

#: A loop plugged in from outside the package (the development tooling's node simulation, for the
#: demo on a local control plane that has no scheduler and no kubelets): made from the operator
#: once it runs, named, and guarded as the operator's own loops are.
ExtraLoop = Callable[["Operator"], tuple[str, Awaitable[None]]]


def kopf_settings(settings: Settings) -> kopf.OperatorSettings:
    """Kopf tuned for a watch-only operator."""
    tuned = kopf.OperatorSettings()
    tuned.posting.enabled = False  # our Events are explicit; Kopf's would land on pods
    tuned.peering.standalone = True  # one active replica is the Lease's job
    tuned.scanning.disabled = True  # resources are named explicitly
    # Kopf's own requests (the webhook configurations) are bounded as the operator's are.
    tuned.networking.request_timeout = settings.api_timeout
    tuned.networking.connect_timeout = settings.api_timeout
    if settings.webhook_enabled:
        configure_admission(tuned, settings)
    return tuned


def make_state(settings: Settings) -> ControllerState:
    engine_settings = EngineSettings(
        scale_min_quota=settings.scale_min_quota,
        reserved_namespace=settings.reserved_namespace,
        default_user=settings.default_user,
    )
    return ControllerState.create(engine_settings, frozenset(settings.ignore_namespaces))


def make_registry(
    state: ControllerState, settings: Settings, metrics: Metrics | None = None
) -> kopf.OperatorRegistry:
    return build_registry(state, settings, metrics)[0]


def build_registry(
    state: ControllerState, settings: Settings, metrics: Metrics | None = None
) -> tuple[kopf.OperatorRegistry, Admission | None]:
    """Kopf's registry (the login, the webhooks when enabled) and the webhooks' decisions."""
    registry = kopf.OperatorRegistry()
    admission = None
    if settings.webhook_enabled:
        admission = register_webhooks(registry, state, settings, metrics)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if settings.kubeconfig or os.environ.get("KUBECONFIG"):
            return kopf.login_with_kubeconfig(**kwargs)
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    return registry, admission


class Operator:
    """All the moving parts of one replica."""

    def __init__(
        self,
        settings: Settings,
        api: client.ApiClient,
        metrics: Metrics | None = None,
        lease_api: client.ApiClient | None = None,
        fence: Fence | None = None,
        extra_loops: Sequence[ExtraLoop] = (),
    ) -> None:
        """``api``: the writers' client, fenced by ``fence`` (``make_api_client``);
        ``lease_api``: the elector's own (default: ``api``); ``extra_loops``: see ``ExtraLoop``."""
        self.settings = settings
        self.extra_loops = tuple(extra_loops)
        self.api = api
        #: The cluster on ``api``; what the loops write to (a dry run's sends nothing).
        self.kube = KubeCluster(api)
        self.cluster: Cluster = DryRunCluster() if settings.dry_run else self.kube
        self.lease_api = lease_api or api
        self.metrics = metrics or Metrics()
        self.state = make_state(settings)
        self.leader = LeaderElector(
            self.lease_api,
            settings.effective_lease_namespace,
            settings.lease_name,
            settings.identity,
            settings.lease_duration,
            settings.lease_retry_period,
            settings.effective_lease_renew_deadline,
            on_renew_failure=self.metrics.lease_renew_failed,
            fence=fence,
        )
        self.metrics.watch(
            self.state, self.leader.leading, self.settings.user_metrics_max_per_quota
        )
        self.context = LoopContext(
            self.state, self.cluster, settings, self.leader.leading, self.metrics
        )
        self.reconciler = Reconciler(self.context)
        self.profiles = ProfileController(self.context)
        self.reporter = ProblemReporter(
            self.state,
            self.cluster,
            self.reconciler.writer,
            Settling(grace=settings.profile_debounce + SETTLE_SECONDS),
        )
        self.names = NameRecorder(self.state, self.cluster)
        self.ingest = Ingest(self.state, api, list_from_cache=settings.list_from_cache)
        self.stop_flag = asyncio.Event()
        # One eviction budget: revocation and in-quota preemption share the rate limit.
        self.eviction_limiter = RateLimiter(settings.eviction_rate)

    async def run(self) -> None:
        """Until Kopf stops (SIGINT/SIGTERM or ``stop_flag``)."""
        health = None
        if self.settings.metrics_port:
            app = health_app(self.state, self.leader.leading, self.metrics)
            health = await serve(app, self.settings.metrics_port, self.settings.metrics_address)
        registry, admission = build_registry(self.state, self.settings, self.metrics)
        loops: list[tuple[str, Awaitable[None]]] = [
            ("readers", self.ingest.run()),
            ("heap", self._freeze_heap_when_synced()),
            ("event loop probe", self._probe_loop()),
            ("leader lease", self._elect()),
            ("reconciler", self.reconciler.run()),
            ("profiles", self.profiles.run()),
            ("problems", self._report_problems()),
            ("reserved quotas", self._ensure_reserved()),
        ]
        if self.settings.gating:
            loops.append(("gating", self._gate()))
        if self.settings.revocation:
            revocation = RevocationController(self.context, limiter=self.eviction_limiter)
            loops.append(("revocation", revocation.run()))
        if admission is not None:
            loops.append(("webhook catalog", self._index_for_webhooks(admission)))
        certificates = self._webhook_certificates()
        if certificates is not None:
            loops.append(("webhook certificate", certificates.run()))
        loops.extend(make(self) for make in self.extra_loops)
        background = [
            asyncio.create_task(self._guarded(coro, name), name=name) for name, coro in loops
        ]
        try:
            server_settings = self.settings
            if certificates is not None:
                # The server loads the managed certificate's files: there before it starts.
                await certificates.prepare(self.stop_flag)
                server_settings = certificates.server_settings()
            await kopf.operator(
                registry=registry,
                settings=kopf_settings(server_settings),
                clusterwide=True,
                standalone=True,
                stop_flag=self.stop_flag,
                memo=kopf.Memo(),
            )
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.leader.release()
            if health is not None:
                await health.cleanup()

    def _webhook_certificates(self) -> WebhookCertificates | None:
        """The managed webhook certificate and the caBundle patches, when the settings ask for
        either (``controller.webhooks.certrotation``); through the election's client, which is not
        fenced: the first replica creates the Secret before any holds the Lease."""
        settings = self.settings
        wanted = settings.webhook_cert_secret or settings.webhook_ca_bundle_configuration
        if not (settings.webhook_enabled and wanted):
            return None
        return WebhookCertificates(settings, self.lease_api, self.leader.leading)

    async def _guarded(self, coro: Awaitable[None], name: str) -> None:
        """A background loop that dies takes the operator down (never a silent half-operator)."""
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s failed; stopping the operator", name)
            self.stop_flag.set()

    async def _probe_loop(self) -> None:
        """The loop's lag, and a watchdog thread that says where a long stall happens."""
        watchdog = StallWatchdog(after=self.settings.loop_stall_report_after).start()
        try:
            await probe_loop(self.metrics, watchdog=watchdog)
        finally:
            await asyncio.to_thread(watchdog.stop)

    async def _index_for_webhooks(self, admission: Admission) -> None:
        """The webhooks' quota catalog, built in slices once the memory is synced and kept up to
        date every second: a request would otherwise index every quota changed since the last
        one at once (10,000 at the first, or after a start that rewrote them all: ~0.5 s)."""
        await self.state.synced.wait()
        while True:
            await admission.quotas.follow()
            await asyncio.sleep(CATALOG_FOLLOW_INTERVAL)

    async def _freeze_heap_when_synced(self) -> None:
        """The listed cluster lives as long as the process: no full collection should scan it.
        Then the survivors of each collection of the older generations are frozen too, and
        everything is collected once the heap grew by a quarter more than the cluster
        did, when the watches are quiet (``controller.observability.heap``)."""
        await self.state.synced.wait()
        heap.freeze("after the initial listing")
        await heap.thaw_when_grown(self._last_watch_event, self.state.population)

    def _last_watch_event(self) -> float:
        return max((health.last_event for health in self.state.readers.values()), default=0.0)

    async def _elect(self) -> None:
        await self.state.synced.wait()  # stand for election only with a complete memory
        try:
            await ensure_namespace(self.lease_api, self.settings.effective_lease_namespace)
        except Exception as error:  # e.g. no permission: the namespace may well exist already
            logger.info("could not ensure the lease namespace: %s", describe(error))
        await self.leader.run()

    async def _gate(self) -> None:
        """Gating where the API server has scheduling gates; said once when it has not. Its
        version is read with retries; a lasting or permanent failure (403) stops the operator,
        saying what it could not read."""
        await self.state.synced.wait()
        try:
            supported, version = await supports_scheduling_gates(self.api)
        except Exception as error:
            raise RuntimeError(
                f"cannot read the API server's version: {describe(error)}"
            ) from error
        if not supported:
            logger.warning(
                "the API server (%s) has no pod scheduling gates (Kubernetes 1.27+): admission "
                "gating is off, over-use revocation still runs",
                version,
            )
            return
        self.state.gates_supported = True  # from now on the pod webhook adds the gate
        gates = GateController(self.context, limiter=self.eviction_limiter)
        await gates.run()

    async def _ensure_reserved(self) -> None:
        await keep_reserved_quotas(
            self.cluster,
            self.state,
            self.settings.reserved_namespace,
            self.leader.leading,
            retry=max(self.settings.reconcile_interval, self.settings.lease_retry_period),
        )

    async def _report_problems(self) -> None:
        await self.state.synced.wait()
        while True:
            await self.leader.leading.wait()
            await self.reporter.report()
            await self.names.record()
            await asyncio.sleep(max(self.settings.reconcile_interval, 1.0))


class RetriesAreNotErrors(logging.Filter):
    """Kopf logs each retry of its own API requests at ERROR ("Request attempt #2/9 failed; will
    retry"), though a retry that succeeds healed itself: these lines become DEBUG (shown only at
    that level). Its final failure ("escalating") stays an ERROR."""

    RETRYING = ("; will retry:", "; will re-authenticate:")

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("kopf") or record.levelno != logging.ERROR:
            return True
        message = record.getMessage()
        if not (message.startswith("Request attempt") and any(m in message for m in self.RETRYING)):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RetriesAreNotErrors())
    # Kopf logs every handler call on every object at INFO, and its webhook server (aiohttp's
    # access log) every admission request: keep only their warnings.
    for name in (
        "kopf.objects",
        "kopf._core.engines.peering",
        "kopf.activities.probe",
        "aiohttp.access",
    ):
        logging.getLogger(name).setLevel(logging.WARNING)


async def run_operator(settings: Settings, extra_loops: Sequence[ExtraLoop] = ()) -> None:
    """The whole operator, until stopped."""
    configure_logging(settings.log_level)
    heap.limit_malloc_arenas()  # before any worker thread allocates
    if settings.kubeconfig:
        os.environ["KUBECONFIG"] = settings.kubeconfig  # for Kopf's login too
    start_kernels(settings.numba_cache_seed)  # seeds NUMBA_CACHE_DIR, then warms up
    heap.freeze("after start-up", collect=True)  # before the loop starts: no one waits yet
    heap.refreeze_after_collections()  # the listing's survivors too, as it goes
    metrics = Metrics()
    fence = Fence(settings.effective_lease_renew_deadline)
    # Each request is abandoned after ``api_timeout``, below ``with_retries``' 30 s per attempt, so
    # that a hung request is counted as a timeout (and retried) rather than cancelled unseen.
    api = await make_api_client(settings.kubeconfig, metrics.api_error, settings.api_timeout, fence)
    # The election's requests never queue behind the writes, each bounded by the renew deadline.
    lease_api = await make_api_client(
        settings.kubeconfig, metrics.api_error, settings.effective_lease_renew_deadline
    )
    solver = use_one_solver_thread()  # and a short switch interval: the loop waits less
    try:
        await Operator(settings, api, metrics, lease_api, fence, extra_loops).run()
    finally:
        for each in (api, lease_api):
            with contextlib.suppress(Exception):
                await each.close()
        solver.shutdown(wait=False, cancel_futures=True)
