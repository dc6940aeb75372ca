"""Package the Helm chart for a release: ``helm package`` into ``dist/``, the image set.

``make release`` pushes the image to ``<registry>/elastic-quota-operator:<version>`` and then this
chart; a chart installed from an OCI registry must find that image without ``--set``, so the
packaged copy's ``image.repository`` default is the pushed repository (``--image-repository``).
Only that one line of ``values.yaml`` changes (its comments and everything else stay as they are);
the source chart is never touched: the chart is copied to a temporary directory first.

The archive is ``<destination>/elastic-quota-operator-<version>.tgz``, version the chart's
(``Chart.yaml``); it is opened again afterwards and refused unless its ``Chart.yaml`` has that
version and its ``values.yaml`` that repository. Prints the archive's path.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "elastic-quota-operator"
#: The ``repository:`` line of the top-level ``image:`` block (values.yaml indents by two).
REPOSITORY_LINE = re.compile(r"^  repository:")


class PackagingError(Exception):
    """The chart could not be packaged as asked (the message says why)."""


def with_image_repository(values: str, repository: str) -> str:
    """``values.yaml``'s text with ``image.repository`` set to ``repository`` (``host[:port]/path``,
    no scheme, no tag)."""
    last = repository.rsplit("/", 1)[-1]
    allowed = re.fullmatch(r"[a-z0-9][a-z0-9._:/-]*[a-z0-9]", repository)
    if not allowed or "://" in repository or "//" in repository or ":" in last:
        raise PackagingError(f"image repository {repository!r}: not a repository reference")
    lines = values.splitlines(keepends=True)
    in_image = False
    for number, line in enumerate(lines):
        if line[:1] not in ("", " ", "#", "\n"):  # a top-level key: the block it opens
            in_image = line.rstrip() == "image:"
        elif in_image and REPOSITORY_LINE.match(line):
            lines[number] = f"  repository: {repository}\n"
            break
    else:
        raise PackagingError("values.yaml: no image.repository line in the top-level image block")
    changed = "".join(lines)
    if yaml.safe_load(changed)["image"]["repository"] != repository:
        raise PackagingError("values.yaml: image.repository did not take the new value")
    return changed


def chart_version(chart: Path) -> str:
    version = yaml.safe_load((chart / "Chart.yaml").read_text())["version"]
    return str(version)


def package(
    helm: str, destination: Path, image_repository: str | None = None, chart: Path = CHART
) -> Path:
    """The chart packaged into ``destination`` (created if needed); its archive's path."""
    version = chart_version(chart)
    destination.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        staged = Path(work) / chart.name
        shutil.copytree(chart, staged)
        if image_repository:
            values = staged / "values.yaml"
            values.write_text(with_image_repository(values.read_text(), image_repository))
        result = subprocess.run(
            [helm, "package", str(staged), "--destination", str(destination.resolve())],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    if result.returncode != 0:
        raise PackagingError(f"helm package failed: {result.stderr.strip() or result.stdout}")
    archive = destination / f"{chart.name}-{version}.tgz"
    check_archive(archive, chart.name, version, image_repository)
    return archive


def check_archive(archive: Path, name: str, version: str, image_repository: str | None) -> None:
    """Refuse an archive whose Chart.yaml or image.repository is not what was packaged."""
    if not archive.is_file():
        raise PackagingError(f"{archive}: helm package wrote no such archive")
    with tarfile.open(archive) as tar:
        meta = tar.extractfile(f"{name}/Chart.yaml")
        values = tar.extractfile(f"{name}/values.yaml")
        if meta is None or values is None:
            raise PackagingError(f"{archive}: no {name}/Chart.yaml or values.yaml in it")
        packaged = yaml.safe_load(meta.read())
        repository = yaml.safe_load(values.read())["image"]["repository"]
    if str(packaged["version"]) != version:
        raise PackagingError(f"{archive}: Chart.yaml version {packaged['version']}, not {version}")
    if image_repository and repository != image_repository:
        raise PackagingError(f"{archive}: image.repository {repository}, not {image_repository}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--helm", default="helm", help="the helm executable")
    parser.add_argument("--destination", type=Path, default=ROOT / "dist")
    parser.add_argument(
        "--image-repository", help="the packaged chart's default image.repository (unset: as is)"
    )
    args = parser.parse_args(argv)
    try:
        archive = package(args.helm, args.destination, args.image_repository)
    except PackagingError as error:
        print(f"package_chart: {error}", file=sys.stderr)
        return 1
    print(archive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
