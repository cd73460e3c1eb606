"""Kubernetes API credentials, found the standard way.

`auto` tries, in order: the pod's service account (in-cluster: token and CA under
/var/run/secrets/kubernetes.io/serviceaccount, API server from KUBERNETES_SERVICE_HOST/PORT,
through `kubernetes.config.load_incluster_config`'s loader, which re-reads a rotated token),
then a kubeconfig (the given file, else KUBECONFIG, else ~/.kube/config; an optional context,
through `load_kube_config`), then an explicit API server URL and bearer token. `incluster`,
`kubeconfig` and `explicit` use only that source. When nothing works the error names every
source tried and why it failed. Tokens are never logged or put in errors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kubernetes import client as k8s
from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

log = logging.getLogger(__name__)

KubeAuth = Literal["auto", "incluster", "kubeconfig", "explicit"]
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeCredentialsError(ValueError):
    """No Kubernetes credentials could be loaded from the sources allowed."""


@dataclass(frozen=True)
class KubeCredentials:
    """A client configuration and where it came from (for the start-up log)."""

    configuration: k8s.Configuration
    source: str

    def client(self) -> k8s.ApiClient:
        """Return an API client using these credentials."""
        return k8s.ApiClient(self.configuration)


def in_cluster(
    sa_dir: Path = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] | None = None
) -> KubeCredentials:
    """Return the pod's service-account credentials; raise ConfigException."""
    config = k8s.Configuration()
    extra = {} if environ is None else {"environ": environ}
    loader = InClusterConfigLoader(
        token_filename=str(sa_dir / "token"), cert_filename=str(sa_dir / "ca.crt"), **extra
    )
    loader.load_and_set(config)
    return KubeCredentials(config, f"in-cluster service account ({config.host})")


def from_kubeconfig(path: Path | None = None, context: str | None = None) -> KubeCredentials:
    """Return a kubeconfig's credentials (default: KUBECONFIG or ~/.kube/config)."""
    config = k8s.Configuration()
    where = str(path) if path else kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    kube_config.load_kube_config(
        config_file=where, context=context, client_configuration=config, persist_config=False
    )
    label = f"kubeconfig {where}" + (f" context {context}" if context else "")
    return KubeCredentials(config, f"{label} ({config.host})")


def explicit(host: str | None, token: str | None, ca_cert: Path | None = None) -> KubeCredentials:
    """Return credentials from an API server URL and an optional bearer token."""
    if not host:
        raise ConfigException("no API server URL (TG_ACT_KUBE_HOST) set")
    config = k8s.Configuration(host=host)
    if ca_cert is not None:
        config.ssl_ca_cert = str(ca_cert)
    if token:
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    return KubeCredentials(config, f"explicit API server {host}")


def load_credentials(
    auth: KubeAuth = "auto",
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    host: str | None = None,
    token: str | None = None,
    ca_cert: Path | None = None,
    sa_dir: Path = SERVICE_ACCOUNT_DIR,
    environ: Mapping[str, str] | None = None,
) -> KubeCredentials:
    """Return the first credentials that load among the sources `auth` allows.

    `environ` replaces the process environment for the in-cluster variables (tests).
    """
    sources = {
        "incluster": lambda: in_cluster(sa_dir, environ),
        "kubeconfig": lambda: from_kubeconfig(kubeconfig, context),
        "explicit": lambda: explicit(host, token, ca_cert),
    }
    where = {
        "incluster": f"incluster ({sa_dir})",
        "kubeconfig": f"kubeconfig ({kubeconfig or kube_config.KUBE_CONFIG_DEFAULT_LOCATION})",
        "explicit": "explicit",
    }
    order = list(sources) if auth == "auto" else [auth]
    tried = []
    for name in order:
        try:
            found = sources[name]()
        except (ConfigException, OSError, ValueError) as exc:
            tried.append(f"{where[name]}: {_reason(exc)}")
            continue
        if auth == "auto" and host and name != "explicit":
            log.warning("TG_ACT_KUBE_HOST is set but %s was found first and is used", name)
        log.info("kubernetes credentials: %s", found.source)
        return found
    raise KubeCredentialsError(
        f"no Kubernetes credentials (TG_ACT_KUBE_AUTH={auth}); tried " + "; ".join(tried)
    )


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
