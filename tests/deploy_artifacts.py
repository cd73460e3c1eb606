"""Check deployment artefacts (rendered Kubernetes objects, compose services) against the CLI.

A container of the TrainGuard image runs `trainguard <args>` (the image's entrypoint). What
would make it crash-loop, or be unreachable, is reported as a problem string:

- its arguments do not parse with the real `trainguard` parser (`trainguard.cli.build_parser`),
  or a long-running workload (Deployment, DaemonSet, compose service) runs a one-shot command;
- a TG_* variable no setting reads (`trainguard.settings.check_environment`), a literal value
  the setting's type refuses (every settings class is built from the container's environment),
  or a secret (a SecretStr setting) given as a literal instead of a secretKeyRef;
- a secretKeyRef to a Secret or key the render does not hold (unless optional or external),
  or `envFrom`, which would hide its variable names from these checks;
- a container port, probe or Service target port the process does not listen on, or a
  listener bound to loopback (unreachable from a probe or a Service); a Service port named
  `metrics`, or a `prometheus.io/port` annotation, that is not a /metrics listener;
- a credential file setting (`TG_ALERTMANAGER_PASSWORD_FILE`, ...) that points outside every
  Secret volume the container mounts, or at a key that volume does not hold; a Secret volume
  of a Secret or key the render does not hold;
- a ServiceMonitor that selects no metrics Service, names a port they lack, or takes the job
  name from a label that is not `trainguard-<role>` (the alert rules select those jobs).

The checks only read: no cluster, no container engine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from unittest import mock

from pydantic import SecretStr, ValidationError
from pydantic_settings import BaseSettings

from api.settings import ApiSettings
from ingest.agent.settings import AgentSettings
from tests.deploy_manifests import (
    PLACEHOLDER,
    Container,
    k8s_containers,
    pod_templates,
    secret_volumes,
)
from trainguard.cli import build_parser
from trainguard.settings import (
    ActSettings,
    BusSettings,
    DiagnoseSettings,
    SinkProcessSettings,
    StoreSettings,
    check_environment,
    env_names,
    settings_classes,
)
from ui.settings import ConsoleSettings

ENTRYPOINTS: tuple[list[str], ...] = ([], ["trainguard"], ["python", "-m", "trainguard"])
SERVICE_COMMANDS = {"sink", "agent", "diagnose", "act", "api", "console"}
KAFKA_COMMANDS = {"sink", "agent", "diagnose", "act"}
STORE_COMMANDS = {"sink", "diagnose", "act", "api", "migrate", "retention"}
WEBHOOK_KEY_COMMANDS = {"act", "api"}
"""The value checked for a variable set from a Secret, a field or compose interpolation."""
WILDCARD_HOSTS = {"0.0.0.0", "::", ""}
HEALTH_PATHS = {
    "api": {"/healthz", "/readyz"},
    "console": {"/_stcore/health"},
    "metrics": {"/metrics"},
}
"""The paths each kind of listener answers (probes must use one of them)."""
CREDENTIAL_FILES = frozenset(
    {
        "TG_ALERTMANAGER_PASSWORD_FILE",
        "TG_ALERTMANAGER_BEARER_TOKEN_FILE",
        "TG_ACT_KUBE_CA_CERT",
        "TG_ACT_KUBE_CONFIG",
    }
)
"""Settings naming a file that holds a credential: it must come from a mounted Secret."""
SCRAPE_JOB_PREFIX = "trainguard-"
"""deploy/prometheus/rules.yml's TrainGuardTargetDown selects up{job=~"trainguard-.*"}."""


@dataclass(frozen=True)
class Listener:
    """An address the process listens on, and what it serves there."""

    host: str
    port: int
    serves: str
    setting: str


def _env_fields() -> dict[str, tuple[type[BaseSettings], str]]:
    """Return each TG_* name's settings class and field name."""
    found: dict[str, tuple[type[BaseSettings], str]] = {}
    for cls in settings_classes():
        for name, field_name in zip(env_names(cls), cls.model_fields, strict=True):
            found[name] = (cls, field_name)
    return found


def is_secret(name: str) -> bool:
    """Return whether the TG_* variable `name` is a secret (a SecretStr setting)."""
    entry = _env_fields().get(name.upper())
    if entry is None:
        return False
    cls, field_name = entry
    annotation = cls.model_fields[field_name].annotation
    return SecretStr in getattr(annotation, "__args__", ()) or annotation is SecretStr


def secret_ref_problems(
    docs: Iterable[Mapping[str, Any]], external_secrets: frozenset[str] = frozenset()
) -> list[str]:
    """Return secretKeyRefs to Secrets or keys that neither the render nor `external` hold."""
    docs = [d for d in docs if d]
    secrets = {
        d["metadata"]["name"]: {*d.get("data", {}), *d.get("stringData", {})}
        for d in docs
        if d.get("kind") == "Secret"
    }
    problems = []
    for doc in docs:
        for workload, _, template in pod_templates(doc):
            for volume, refs in secret_volumes(template.get("spec", {})).items():
                for secret, files, optional in refs:
                    if secret in external_secrets or optional:
                        continue
                    if secret not in secrets:
                        problems.append(f"{workload}: volume {volume}: no Secret {secret}")
                        continue
                    for key in sorted(set((files or {}).values()) - secrets[secret]):
                        problems.append(
                            f"{workload}: volume {volume}: Secret {secret} has no key {key}"
                        )
            for spec in template.get("spec", {}).get("containers", []):
                for entry in spec.get("env", []):
                    ref = entry.get("valueFrom", {}).get("secretKeyRef")
                    if ref is None or ref["name"] in external_secrets:
                        continue
                    if ref["name"] not in secrets:
                        problems.append(f"{workload}: {entry['name']}: no Secret {ref['name']}")
                    elif ref["key"] not in secrets[ref["name"]] and not ref.get("optional"):
                        problems.append(
                            f"{workload}: {entry['name']}: Secret {ref['name']} has no key "
                            f"{ref['key']}"
                        )
    return problems


# ---- the checks -------------------------------------------------------------------------


def _parse(argv: list[str]) -> tuple[argparse.Namespace | None, str]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return build_parser().parse_args(argv), ""
    except SystemExit:
        return None, err.getvalue().strip().splitlines()[-1] if err.getvalue() else "exit"


def _settings(env: Mapping[str, str]) -> tuple[dict[type[BaseSettings], BaseSettings], str]:
    """Build every settings class from exactly `env`; return them or the first refusal."""
    built: dict[type[BaseSettings], BaseSettings] = {}
    with mock.patch.dict(os.environ, env, clear=True):
        for cls in settings_classes():
            try:
                built[cls] = cls()
            except ValidationError as exc:
                return built, f"{cls.__name__}: {exc.errors()[0]['msg']} {exc.errors()[0]['loc']}"
    return built, ""


def listeners(command: str, built: Mapping[type[BaseSettings], BaseSettings]) -> list[Listener]:
    """Return where `trainguard <command>` listens with these settings."""
    found = []
    if command == "api":
        api = built[ApiSettings]
        assert isinstance(api, ApiSettings)
        found.append(Listener(api.host, api.port, "api", "TG_API_HOST/TG_API_PORT"))
    elif command == "console":
        console = built[ConsoleSettings]
        assert isinstance(console, ConsoleSettings)
        found.append(
            Listener(console.host, console.port, "console", "TG_CONSOLE_HOST/TG_CONSOLE_PORT")
        )
    elif command == "sink":
        sink = built[SinkProcessSettings]
        assert isinstance(sink, SinkProcessSettings)
        if sink.metrics_port:
            found.append(
                Listener(sink.metrics_host, sink.metrics_port, "metrics", "TG_SINK_METRICS_*")
            )
    elif command == "diagnose":
        diag = built[DiagnoseSettings]
        assert isinstance(diag, DiagnoseSettings)
        if diag.metrics_port:
            found.append(
                Listener(diag.metrics_host, diag.metrics_port, "metrics", "TG_DIAGNOSE_METRICS_*")
            )
    elif command == "agent":
        agent = built[AgentSettings]
        assert isinstance(agent, AgentSettings)
        if agent.metrics_port:
            found.append(
                Listener(agent.metrics_host, agent.metrics_port, "metrics", "TG_AGENT_METRICS_*")
            )
    elif command == "act":
        act = built[ActSettings]
        assert isinstance(act, ActSettings)
        if act.metrics_port:
            found.append(
                Listener(act.metrics_host, act.metrics_port, "metrics", "TG_ACT_METRICS_*")
            )
    if command == "api":
        api = built[ApiSettings]
        assert isinstance(api, ApiSettings)
        if api.metrics_port:  # served by the launcher, a port of its own
            found.append(
                Listener(api.metrics_host, api.metrics_port, "metrics", "TG_API_METRICS_*")
            )
    return found


def container_problems(c: Container) -> list[str]:
    """Return why `c` would not start, or would start unreachable (empty: it is fine)."""
    problems = []
    if (c.command or []) not in ENTRYPOINTS:
        problems.append(f"{c.where}: command {c.command} is not the trainguard entrypoint")
    args, error = _parse(c.args)
    if args is None:
        return [*problems, f"{c.where}: `trainguard {' '.join(c.args)}` exits 2: {error}"]
    command = str(args.command)
    service = command in SERVICE_COMMANDS
    if command == "api" and getattr(args, "api_command", None) is not None:
        service = False
    if command == "diagnose" and getattr(args, "dir", None) is not None:
        service = False
    if c.long_running and not service:
        problems.append(f"{c.where}: `trainguard {' '.join(c.args)}` exits: not a service")
    names = [*c.literal_env, *c.ref_env]
    refusal = check_environment(dict.fromkeys(names, ""))
    if refusal is not None:
        problems.append(f"{c.where}: {refusal.splitlines()[0].removeprefix('trainguard: ')}")
    for name in c.literal_env:
        if is_secret(name):
            problems.append(f"{c.where}: secret {name} is a literal value, not a secretKeyRef")
    env = {k: v for k, v in c.literal_env.items() if k.upper().startswith("TG_")}
    env.update(
        {k: c.ref_values.get(k, PLACEHOLDER) for k in c.ref_env if k.upper().startswith("TG_")}
    )
    built, refused = _settings(env)
    if refused:
        return [*problems, f"{c.where}: invalid settings: {refused}"]
    problems += _backend_problems(c, command, built, names)
    problems += _credential_file_problems(c)
    heard = listeners(command, built)
    c.served = {lst.port: lst.serves for lst in heard}
    return problems + _port_problems(c, heard)


def _credential_file_problems(c: Container) -> list[str]:
    """Return credential file settings that do not point at a key of a mounted Secret."""
    problems = []
    for name in sorted(CREDENTIAL_FILES & {*c.literal_env, *c.ref_env}):
        path = c.literal_env.get(name)
        if path is None:
            problems.append(f"{c.where}: {name} must be a literal path into a Secret volume")
            continue
        for mount in c.secret_mounts:
            if mount.key_of(path) is not None:
                break
        else:
            inside = [m for m in c.secret_mounts if path.startswith(m.path.rstrip("/") + "/")]
            where = (
                f"Secret {inside[0].secret} mounted there has no such file"
                if inside
                else ("no Secret volume is mounted there")
            )
            problems.append(f"{c.where}: {name}={path}: {where}")
    return problems


def _backend_problems(
    c: Container, command: str, built: Mapping[type[BaseSettings], BaseSettings], names: list[str]
) -> list[str]:
    """Return the services that would exit at once, or write where a container cannot."""
    problems = []
    bus = built[BusSettings]
    assert isinstance(bus, BusSettings)
    store = built[StoreSettings]
    assert isinstance(store, StoreSettings)
    if command in KAFKA_COMMANDS and bus.mode != "kafka":
        problems.append(f"{c.where}: `trainguard {command}` exits 2 without TG_KAFKA_MODE=kafka")
    if command in STORE_COMMANDS and store.mode != "server":
        problems.append(
            f"{c.where}: `trainguard {command}` needs TG_CLICKHOUSE_MODE=server (embedded "
            "keeps the data inside one container)"
        )
    if command in WEBHOOK_KEY_COMMANDS and "TG_WEBHOOK_KEY" not in names:
        problems.append(
            f"{c.where}: `trainguard {command}` without TG_WEBHOOK_KEY writes a key file of "
            "its own (on a read-only root, or differing between replicas)"
        )
    return problems


def _port_problems(c: Container, heard: list[Listener]) -> list[str]:
    problems = []
    by_port = {lst.port: lst for lst in heard}
    for lst in heard:
        if lst.host not in WILDCARD_HOSTS and c.ports:
            problems.append(
                f"{c.where}: listens on {lst.host}:{lst.port} ({lst.setting}): loopback "
                "is unreachable from probes and Services; use 0.0.0.0"
            )
    for name, declared in c.ports.items():
        if declared not in by_port:
            problems.append(
                f"{c.where}: port {name}={declared} but the process listens on "
                f"{sorted(by_port) or 'nothing'}"
            )
    for probe, port_ref, path in c.probes:
        port = c.ports.get(port_ref) if isinstance(port_ref, str) else port_ref
        if port is None:
            problems.append(f"{c.where}: {probe} port {port_ref} is not a container port")
        elif port not in by_port:
            problems.append(f"{c.where}: {probe} port {port} is not listened on")
        elif path is not None and path not in HEALTH_PATHS[by_port[port].serves]:
            problems.append(f"{c.where}: {probe} path {path} is not served on port {port}")
    return problems


def service_problems(docs: Iterable[Mapping[str, Any]], containers: list[Container]) -> list[str]:
    """Return Services that select no TrainGuard pod, or target a port none of them declares."""
    problems = []
    for doc in docs:
        if not doc or doc.get("kind") != "Service":
            continue
        name = doc["metadata"]["name"]
        selector = doc.get("spec", {}).get("selector", {})
        pods = [c for c in containers if selector and selector.items() <= c.labels.items()]
        if not pods:
            problems.append(f"Service/{name}: selects no TrainGuard pod ({selector})")
            continue
        for port in doc["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            declared = any(str(target) in c.ports or target in c.ports.values() for c in pods)
            if not declared:
                problems.append(f"Service/{name}: targetPort {target} is no port of its pods")
            elif port.get("name") == "metrics":
                problems += _metrics_port_problems(f"Service/{name}: port metrics", target, pods)
        notes = doc["metadata"].get("annotations", {})
        if notes.get("prometheus.io/scrape") == "true":
            scraped = int(notes.get("prometheus.io/port", 0))
            where = f"Service/{name}: prometheus.io/port"
            problems += _metrics_port_problems(where, scraped, pods)
            if notes.get("prometheus.io/path", "/metrics") not in HEALTH_PATHS["metrics"]:
                problems.append(f"Service/{name}: prometheus.io/path is not /metrics")
    return problems


def _metrics_port_problems(where: str, target: str | int, pods: list[Container]) -> list[str]:
    """Return a problem for each pod where `target` is not a port serving /metrics."""
    problems = []
    for c in pods:
        port = c.ports.get(target) if isinstance(target, str) else target
        if port is None or c.served.get(port) != "metrics":
            serving = sorted(p for p, what in c.served.items() if what == "metrics")
            problems.append(
                f"{where} {target} is not where {c.where} serves /metrics ({serving or 'none'})"
            )
    return problems


def service_monitor_problems(docs: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return ServiceMonitors that would scrape nothing, or under a job the rules ignore."""
    docs = [d for d in docs if d]
    services = [d for d in docs if d.get("kind") == "Service"]
    problems = []
    for doc in docs:
        if doc.get("kind") != "ServiceMonitor":
            continue
        name = f"ServiceMonitor/{doc['metadata']['name']}"
        spec = doc.get("spec", {})
        wanted = spec.get("selector", {}).get("matchLabels", {})
        selected = [
            s for s in services if wanted.items() <= s["metadata"].get("labels", {}).items()
        ]
        if not selected:
            problems.append(f"{name}: selects no Service ({wanted})")
        job_label = spec.get("jobLabel")
        for svc in selected:
            svc_name = svc["metadata"]["name"]
            port_names = {p.get("name") for p in svc["spec"].get("ports", [])}
            for endpoint in spec.get("endpoints", []):
                if endpoint.get("port") not in port_names:
                    problems.append(
                        f"{name}: Service/{svc_name} has no port named {endpoint.get('port')}"
                    )
            job = svc["metadata"].get("labels", {}).get(job_label) if job_label else svc_name
            if not str(job).startswith(SCRAPE_JOB_PREFIX):
                problems.append(
                    f"{name}: Service/{svc_name} is scraped as job {job!r}, not "
                    f"{SCRAPE_JOB_PREFIX}<role> (TrainGuardTargetDown would not see it)"
                )
    return problems


def k8s_problems(
    docs: Iterable[Mapping[str, Any]], external_secrets: frozenset[str] = frozenset()
) -> list[str]:
    """Return every problem of a rendered set of Kubernetes objects (empty: it would start)."""
    docs = [d for d in docs if d]
    containers, problems = k8s_containers(docs)
    for c in containers:
        problems += container_problems(c)
    return (
        problems
        + secret_ref_problems(docs, external_secrets)
        + service_problems(docs, containers)
        + service_monitor_problems(docs)
    )
