"""Cluster-scale figures of the operator on a local kube-apiserver (``make bench-scale``).

Builds a big cluster (by default 1,000 nodes, 10,000 quotas in a tree of depth 4 and 100,000 pods,
see ``scalebench.shape``), then measures from outside, one stdout line per figure (progress on
stderr):

* ``scale create``: how long creating the pods through the API server took (``--concurrency``
  requests in flight);
* ``scale start``: with every object already in the API server, from starting the operator to its
  memory being synced and itself active (``/readyz`` 200 with ``active``), and to every quota's
  annotations and ``status.used`` being what ``plan`` computes for the same objects; the
  operator's peak RSS (VmHWM), its writes, and the CPU seconds the API server, etcd and the
  operator spent meanwhile (``*_cpu_s``: on 2 cores, where the time went; the burst line has them
  too). ``--sizes 10000,50000,100000`` repeats it at each pod count in one
  run (the pods are added between the starts);
* ``scale restart``: the operator replaced (SIGTERM, a new process) with nothing changed, as in a
  rolling upgrade: synced and active, every quota correct, and the writes it made (none expected);
  ``scale restart-requests``: what the API server was asked meanwhile, by verb and resource, with
  the bytes of its answers (its own ``apiserver_request_total`` and response sizes);
* ``scale burst``: the operator running and converged, ``--burst-pods`` more (pending) pods created
  as fast as possible; the time from the last create until every quota is correct again, and the
  operator's writes meanwhile (MODIFIED watch events on the quotas, as ``bench_e2e`` counts them);
  the CPU seconds over the whole burst and (``converge_*``) from the last create to the match;
* ``scale loop``: the longest event-loop stall during the burst, from the operator's own probe
  (``elastic_quota_event_loop_lag_seconds``: the upper bound of the highest bucket that gained a
  sample), and during the burst the p99 latency of the operator's validating webhook
  for quotas, called directly over HTTPS at a steady rate (a dry-run CREATE AdmissionReview) by a
  separate process, with the latency of ``/healthz`` (answered by the same event loop) beside it;
* ``scale pass``: one reconcile pass after a few pod changes: ``--changed-pods`` pending pods
  created (then deleted) at a time, ``--pass-rounds`` times, p50 / p99 from the operator's
  ``elastic_quota_reconcile_seconds`` histogram (the difference of its buckets over the phase,
  interpolated within buckets as ``histogram_quantile`` does), with the pod change -> annotation
  latency measured from outside beside it;
* ``scale failover``: a second replica on the same Lease, the active one killed with SIGKILL, one
  pod created: the time until the standby has written that change correctly (it includes waiting
  out the Lease, ``lease_duration_s``), and that time counted from the moment the Lease, as the
  killed replica last renewed it, expired (``after_expiry_s``: the standby's own reaction).

Every wait has a limit (``--timeout``); a quota that is not correct in time fails the run with the
first mismatches. The operator runs with its defaults (reconcile interval 1 s, revocation on: the
cluster is sized so that nothing is over-used), with the webhooks served on loopback but not
registered with the API server (``--webhook-configuration ''``: the pods are not sent through it).
With ``--admission`` the operators register them (``--webhook-configuration`` set, as the chart's
configurations are in a cluster): the API server then calls the operator's webhooks for every
write of a quota, the operator's own included, and for every pod created.
The kube-controller-manager is not started (nothing here needs it; it would watch every pod).
The operators share the machine's cores with the API server, etcd and the benchmark;
``--operator-nice -10`` gives them more CPU weight than those (as a pod with CPU of its own on a
node of its own would have), to tell the stalls the others' CPU causes from the operator's own.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from eqdev.cluster import LocalCluster, apply_crds_sync, default_crd_dir
from scalebench.options import BenchmarkError, Options, parse_options
from scalebench.output import print_stalls, say
from scalebench.phases import ScaleRun
from scalebench.shape import PRIORITY_CLASSES, level_sizes


async def scenario(cluster: LocalCluster, options: Options, log_dir: Path) -> dict[str, float]:
    bench = ScaleRun(cluster, options, log_dir)
    try:
        await bench.run()
    except BaseException:
        for operator in (bench.operator, bench.standby):
            if operator is not None:
                say(f"end of operator {operator.identity}'s log:\n{operator.tail()}")
        raise
    finally:
        await bench.close()
    return bench.timings


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv, __doc__.split("\n\n")[0] if __doc__ else None)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    print(
        f"# cluster scale on a local kube-apiserver: {options.nodes} nodes, {options.quotas} "
        f"quotas (levels {'/'.join(map(str, level_sizes(options.quotas)))}), pods "
        f"{','.join(map(str, options.sizes))}"
        f"{f' + burst {options.burst_pods}' if {'burst', 'loop'} & options.phases else ''}; "
        f"{len(PRIORITY_CLASSES)} priority classes; operator defaults (reconcile interval 1 s)"
        f"{f'; operators at niceness {options.operator_nice}' if options.operator_nice else ''}"
        f"{'; webhooks registered with the API server' if options.admission else ''}",
        flush=True,
    )
    started = time.monotonic()
    try:
        with LocalCluster(controller_manager=False) as cluster:
            apply_crds_sync(cluster.kubeconfig, default_crd_dir())
            timings = asyncio.run(scenario(cluster, options, log_dir))
    except BenchmarkError as error:
        say(f"FAILED: {error}")
        say(f"operator logs: {log_dir}")
        return 1
    print_stalls(log_dir)
    phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
    say(f"done in {time.monotonic() - started:.0f} s ({phases}); operator logs: {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
