"""Read deployment artefacts into the containers they run: rendered Kubernetes objects (pod
templates of workloads, their env, Secret volumes, ports and probes) and compose services.
Reads only; `tests/deploy_artifacts.py` checks what was read against the CLI and settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob"}
LONG_RUNNING_KINDS = {"Deployment", "DaemonSet", "StatefulSet"}
PLACEHOLDER = "set-at-run-time"
"""The value checked for a name set at run time (a secretKeyRef, an interpolation)."""


@dataclass(frozen=True)
class SecretMount:
    """A Secret volume as one container sees it."""

    path: str
    secret: str
    items: dict[str, str] | None
    """File name under `path` -> Secret key; None: every key, under its own name."""
    optional: bool = False

    def key_of(self, file: str) -> str | None:
        """Return the Secret key `file` (an absolute path) is, or None if not in this mount."""
        prefix = self.path.rstrip("/") + "/"
        if not file.startswith(prefix):
            return None
        name = file.removeprefix(prefix)
        if self.items is None:
            return name if "/" not in name else None
        return self.items.get(name)


@dataclass
class Container:
    """One TrainGuard container as deployed: what it runs, its environment, its ports."""

    where: str
    long_running: bool
    command: list[str] | None
    args: list[str]
    literal_env: dict[str, str] = field(default_factory=dict)
    ref_env: dict[str, str] = field(default_factory=dict)
    """Names set at run time, each with where from (secretKeyRef, fieldRef, ...)."""
    ref_values: dict[str, str] = field(default_factory=dict)
    """Values to check for run-time names (compose defaults); others get PLACEHOLDER."""
    ports: dict[str, int] = field(default_factory=dict)
    """Declared container ports by name (unnamed ones under their number)."""
    probes: list[tuple[str, str | int, str | None]] = field(default_factory=list)
    """(probe, port as written, HTTP path or None for TCP)."""
    labels: dict[str, str] = field(default_factory=dict)
    secret_mounts: list[SecretMount] = field(default_factory=list)
    served: dict[int, str] = field(default_factory=dict)
    """What the process serves on each port it listens on (filled by container_problems)."""


def pod_templates(doc: Mapping[str, Any]) -> Iterator[tuple[str, bool, Mapping[str, Any]]]:
    kind = doc.get("kind")
    if kind not in WORKLOAD_KINDS:
        return
    name = f"{kind}/{doc.get('metadata', {}).get('name')}"
    spec = doc.get("spec", {})
    if kind == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    yield name, kind in LONG_RUNNING_KINDS, spec.get("template", {})


def _env_from_k8s(c: Container, entries: Iterable[Mapping[str, Any]]) -> None:
    for entry in entries:
        name = entry["name"]
        if "value" in entry:
            c.literal_env[name] = str(entry["value"])
        elif "valueFrom" in entry:
            source = entry["valueFrom"]
            c.ref_env[name] = next(iter(source))
        else:
            c.literal_env[name] = ""


def secret_volumes(
    pod: Mapping[str, Any],
) -> dict[str, list[tuple[str, dict[str, str] | None, bool]]]:
    """Return each volume's Secrets: (secret name, file -> key or None for all, optional)."""
    found: dict[str, list[tuple[str, dict[str, str] | None, bool]]] = {}
    for volume in pod.get("volumes", []):
        sources = []
        if "secret" in volume:
            sources.append((volume["secret"], "secretName"))
        for source in volume.get("projected", {}).get("sources", []):
            if "secret" in source:
                sources.append((source["secret"], "name"))
        for ref, name_key in sources:
            items = ref.get("items")
            files = None if items is None else {i["path"]: i["key"] for i in items}
            found.setdefault(volume["name"], []).append(
                (ref[name_key], files, bool(ref.get("optional")))
            )
    return found


def k8s_containers(docs: Iterable[Mapping[str, Any]]) -> tuple[list[Container], list[str]]:
    """Return every TrainGuard container in `docs`, and problems found reading them.

    Init containers run to completion, so they count as one-shot whatever their workload.
    """
    found: list[Container] = []
    problems: list[str] = []
    for doc in filter(None, docs):
        for workload, long_running, template in pod_templates(doc):
            pod = template.get("spec", {})
            labels = dict(template.get("metadata", {}).get("labels", {}))
            volumes = secret_volumes(pod)
            specs = [(s, False) for s in pod.get("initContainers", [])]
            specs += [(s, long_running) for s in pod.get("containers", [])]
            for spec, runs_on in specs:
                c = Container(
                    where=f"{workload} container {spec.get('name')}",
                    long_running=runs_on,
                    command=spec.get("command"),
                    args=[str(a) for a in spec.get("args", [])],
                    labels=labels,
                )
                _env_from_k8s(c, spec.get("env", []))
                for mount in spec.get("volumeMounts", []):
                    for secret, files, optional in volumes.get(mount["name"], []):
                        c.secret_mounts.append(
                            SecretMount(mount["mountPath"], secret, files, optional)
                        )
                if spec.get("envFrom"):
                    problems.append(f"{c.where}: envFrom hides its names from this check")
                for port in spec.get("ports", []):
                    c.ports[str(port.get("name", port["containerPort"]))] = int(
                        port["containerPort"]
                    )
                for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                    if probe not in spec:
                        continue
                    how = spec[probe]
                    if "httpGet" in how:
                        c.probes.append((probe, how["httpGet"]["port"], how["httpGet"]["path"]))
                    elif "tcpSocket" in how:
                        c.probes.append((probe, how["tcpSocket"]["port"], None))
                found.append(c)
    return found, problems


def _interpolated(value: str) -> str | None:
    """Return compose's default of `${X:-default}`, PLACEHOLDER for `${X}`, None if literal."""
    if "${" not in value:
        return None
    inner = value[value.index("${") + 2 : value.rindex("}")]
    for sep in (":-", "-"):
        if sep in inner and not inner.startswith(sep):
            return inner.split(sep, 1)[1] or PLACEHOLDER
    return PLACEHOLDER


def compose_containers(doc: Mapping[str, Any], image: str) -> list[Container]:
    """Return the compose services that run `image` as containers to check."""
    found = []
    for name, service in doc.get("services", {}).items():
        if service.get("image") != image:
            continue
        command = service.get("command", [])
        c = Container(
            where=f"compose service {name}",
            long_running=service.get("restart", "no") != "no",
            command=service.get("entrypoint"),
            args=[str(a) for a in command],
        )
        env = service.get("environment", {})
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        for key, value in env.items():
            text = "" if value is None else str(value)
            default = _interpolated(text)
            if default is None:
                c.literal_env[key] = text
            else:
                c.ref_env[key] = "interpolation"
                c.ref_values[key] = default
        for spec in [*service.get("ports", []), *service.get("expose", [])]:
            target = str(spec).rsplit(":", 1)[-1].split("/")[0]
            c.ports[target] = int(target)
        for secret in service.get("secrets", []):
            source = secret if isinstance(secret, str) else secret["source"]
            target = source if isinstance(secret, str) else secret.get("target", source)
            c.secret_mounts.append(SecretMount("/run/secrets", "compose", {target: source}))
        found.append(c)
    return found
