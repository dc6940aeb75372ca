"""``python -m eqdev.demo``: the product live on this machine (what ``make run`` does).

Builds (once, cached) and starts a local kube-apiserver + etcd, installs the CRDs, starts the
operator with the node simulation plugged in (``python -m eqdev.demo.operator``: there is no
scheduler or kubelet locally, so the operator binds pods that fit, marks them Running and removes
deleted ones after their grace period itself, clearly labelled SIMULATION) and a short revocation
delay, then tells the story of :mod:`~eqdev.demo.story` on the example manifests: borrowers run
while ``analytics`` is idle, ``analytics`` asks for its min, the borrower's runtime shrinks and,
after the delay, its least important pods are evicted. The screen shows the live trees and a pane
of recent events until Ctrl-C (or ``--seconds``); ``--no-story`` applies everything at once and
only shows the live view. Then it stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

import eqdev
from elasticquota.cli.tree_command import CLEAR_SCREEN
from elasticquota.kube.errors import describe
from elasticquota.plan.loader import Manifests, load_paths
from eqdev.demo.story import DEFAULT_RECLAIMER, Narrator, Story, plan_story
from eqdev.demo.view import PaneEntry, operator_events, render_frame, render_pane
from eqdev.processes import stop

#: The demo's own pane lines kept (the pane shows the newest of these and of the Events).
KEPT_LINES = 100


def banner(revocation_delay: float) -> str:
    return (
        "SIMULATION: this local cluster has no scheduler and no kubelets. The operator runs\n"
        "with the demo's node simulation: it binds the pods that fit their quota to the example\n"
        "nodes, marks them Running, and removes deleted pods after their grace period, as\n"
        "kubelets would. Against a real cluster, `elastic-quota run` needs none of that.\n"
        f"Revocation delay: {revocation_delay:g} s (a quota above its runtime this long loses its "
        "least important pods)."
    )


#: The help's description: plain text (the module docstring is reStructuredText for the API docs).
DESCRIPTION = """\
The product live on this machine (what `make run` does).

Builds (once, cached) and starts a local kube-apiserver + etcd, installs the CRDs,
starts the operator with the node simulation plugged in (there is no scheduler or
kubelet locally, so the operator binds pods that fit, marks them Running and
removes deleted ones after their grace period itself, clearly labelled SIMULATION)
and a short revocation delay, then tells the story on the example manifests:
borrowers run while analytics is idle, analytics asks for its min, the borrower's
runtime shrinks and, after the delay, its least important pods are evicted. The
screen shows the live trees and a pane of recent events until Ctrl-C (or
--seconds); --no-story applies everything at once and only shows the live view.
Then it stops everything it started."""


def parser() -> argparse.ArgumentParser:
    demo = argparse.ArgumentParser(
        prog="python -m eqdev.demo",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "-f", "--filename", dest="paths", action="append", metavar="PATH",
        help="manifests to apply (default: examples/)",
    )  # fmt: skip
    demo.add_argument(
        "--seconds", type=float, help="stop after this many seconds (default: until Ctrl-C)"
    )
    demo.add_argument("--interval", type=float, default=2.0, help="seconds between redraws")
    demo.add_argument(
        "--revocation-delay", type=float, default=20.0,
        help="seconds a quota may stay above its runtime before its pods are evicted (default 20)",
    )  # fmt: skip
    demo.add_argument(
        "--story-pause", type=float, default=15.0,
        help="seconds the borrowers run before the idle quota asks for its min (default 15)",
    )  # fmt: skip
    demo.add_argument(
        "--reclaimer", default=DEFAULT_RECLAIMER,
        help=f"the quota idle at first that then asks for its min (default {DEFAULT_RECLAIMER})",
    )  # fmt: skip
    demo.add_argument(
        "--no-story", action="store_true", help="apply everything at once; only the live view"
    )
    return demo


def main(argv: Sequence[str] | None = None) -> int:
    return run_demo(parser().parse_args(argv))


async def _apply(api: client.ApiClient, manifests: list[dict[str, Any]]) -> int:
    from elasticquota.kube.apply import apply_manifest, apply_order

    created = 0
    for manifest in apply_order(manifests):
        created += await apply_manifest(api, manifest)
    return created


def _everything(manifests: Manifests) -> list[dict[str, Any]]:
    return [
        *manifests.namespaces,
        *manifests.priority_classes,
        *manifests.nodes,
        *manifests.profiles,
        *manifests.quotas,
        *manifests.pods,
    ]


class Screen:
    """The live view, and the story's turn when one is told."""

    def __init__(self, api: client.ApiClient, args: argparse.Namespace, story: Story | None):
        self._api = api
        self._args = args
        self._story = story
        self._narrator = Narrator()
        self._lines: collections.deque[PaneEntry] = collections.deque(maxlen=KEPT_LINES)
        self._started = time.monotonic()
        self._turned = False
        #: Steps 3 and 4 as they are seen: the reclaimer's runtime raised, a pod revoked.
        self._raised = False
        self._revoked = False

    def say(self, reason: str, text: str) -> None:
        self._lines.append(PaneEntry(time.time(), reason, text))

    async def start(self, manifests: Manifests) -> None:
        if self._story is None:
            created = await _apply(self._api, _everything(manifests))
            self.say("demo", f"applied {created} objects; the operator takes it from here")
        else:
            created = await _apply(self._api, self._story.first)
            self.say(
                "story",
                f"1. the borrowers run while {self._story.reclaimer} is idle: applied {created} "
                f"objects, {self._story.reclaimer}'s {len(self._story.later)} pods held back",
            )
        self._started = time.monotonic()

    async def frame(self) -> str:
        from elasticquota.kube.quotas import list_quotas
        from elasticquota.plan.live import live_snapshot
        from elasticquota.plan.table import render_trees

        snapshot = live_snapshot(await list_quotas(self._api))
        for at, text in self._narrator.observe(snapshot):
            self._lines.append(PaneEntry(at, "operator", text))
            self._raised |= self._turned and self._tells_the_raise(text)
        if self._due(any(result.runtime for result in snapshot.quotas.values())):
            await self._turn()
        events = await operator_events(self._api)
        self._revoked |= self._turned and any(event.reason == "Revoked" for event in events)
        tree = "\n".join(render_trees(snapshot))
        pane = render_pane([*events, *self._lines])
        return render_frame(banner(self._args.revocation_delay), self._steps(), tree, pane)

    def _due(self, runtimes_written: bool) -> bool:
        elapsed = time.monotonic() - self._started
        return (
            self._story is not None
            and not self._turned
            and runtimes_written
            and elapsed >= self._args.story_pause
        )

    async def _turn(self) -> None:
        assert self._story is not None
        self._turned = True
        created = await _apply(self._api, self._story.later)
        names = ", ".join(pod["metadata"]["name"] for pod in self._story.later)
        self.say(
            "story",
            f"2. {self._story.reclaimer} asks for its min: created {created} pending pods "
            f"({names})",
        )

    def _tells_the_raise(self, text: str) -> bool:
        assert self._story is not None
        return text.startswith(f"runtime of {self._story.reclaimer} grows")

    def _steps(self) -> list[str]:
        if self._story is None:
            return []
        who = self._story.reclaimer
        left = max(0.0, self._args.story_pause - (time.monotonic() - self._started))
        turn = "done" if self._turned else f"in {left:.0f} s"
        raised = "done" if self._raised else "next" if self._turned else "later"
        revoked = "done" if self._revoked else "next" if self._raised else "later"
        delay = f"{self._args.revocation_delay:g} s"
        return [
            f"Story: 1. [done] the borrowers run while {who} is idle: they borrow its unused min",
            f"       2. [{turn}] {who} asks for its min: its pods are created, pending",
            f"       3. [{raised}] the operator raises its runtime and shrinks the borrowers' "
            "(! = over)",
            f"       4. [{revoked}] a borrower over its runtime for {delay} loses its least "
            "important pods",
        ]


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def _live(args: argparse.Namespace, manifests: Manifests, story: Story | None) -> None:
    """Apply, then redraw until Ctrl-C, SIGTERM or ``--seconds``; a failed frame is shown, not
    fatal."""
    from elasticquota.kube.client import make_api_client

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    deadline = time.monotonic() + args.seconds if args.seconds is not None else None
    api = await make_api_client()
    try:
        screen = Screen(api, args, story)
        await screen.start(manifests)
        while not stop.is_set():
            try:
                text = await screen.frame()
            except Exception as error:  # the next frame tries again
                text = f"could not read the cluster: {describe(error)}\n"
            sys.stdout.write(CLEAR_SCREEN + text)
            sys.stdout.flush()
            if deadline is not None and time.monotonic() >= deadline:
                return
            await _wait(stop, args.interval)
    finally:
        await api.close()


def _start_operator(log: Path, revocation_delay: float) -> subprocess.Popen[bytes]:
    """``elastic-quota run`` with the node simulation (:mod:`eqdev.demo.operator`), the
    development tooling's source root on its path whoever started the demo."""
    command = [
        sys.executable, "-m", "eqdev.demo.operator",
        "--metrics-port", "0", "--reconcile-interval", "0.5",
        "--revocation-delay", f"{revocation_delay:g}",
    ]  # fmt: skip
    source_root = str(Path(eqdev.__file__).resolve().parents[1])
    path = [source_root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with log.open("wb") as sink:
        # Its own process group: the terminal's Ctrl-C reaches the demo, which stops it in order.
        return subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=environment,
        )


def run_demo(args: argparse.Namespace) -> int:
    from eqdev.cluster import LocalCluster, apply_crds_sync, default_crd_dir

    paths = args.paths or ["examples"]
    manifests = load_paths(paths)
    story = None if args.no_story else plan_story(manifests, args.reclaimer)
    if story is None and not args.no_story:
        print(
            f"no pods of quota {args.reclaimer} in {', '.join(paths)}: showing the live view only"
        )
    log = Path(tempfile.mkstemp(prefix="elastic-quota-operator-", suffix=".log")[1])
    print("starting the local control plane (the first run builds it: about 5 minutes)...")
    try:
        with LocalCluster() as cluster:
            apply_crds_sync(cluster.kubeconfig, default_crd_dir())
            os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
            print(f"control plane up: KUBECONFIG={cluster.kubeconfig}; operator log: {log}")
            operator = _start_operator(log, args.revocation_delay)
            try:
                asyncio.run(_live(args, manifests, story))
            finally:
                stop(operator, grace=20)
    except KeyboardInterrupt:  # Ctrl-C before the live view took the signals over
        print("\ninterrupted")
    print("\nstopped the operator and the local control plane")
    return 0
