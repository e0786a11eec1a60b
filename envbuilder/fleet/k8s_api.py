"""Talking to a Kubernetes cluster: through the `kubernetes` client where it is installed and a
kubeconfig loads, else through `kubectl`. Both answer the same three questions: apply these
manifests, get this object as JSON, give this Job's logs. Nothing here has run against a real
cluster (none can run on the development machines): the kubectl path is tested by its exact
command lines, the client path by its calls (tests/unit/test_fleet_k8s.py)."""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from envbuilder.errors import SchedulerError
from envbuilder.fleet.kubernetes import K8sNode, dump_manifests, nodes_from_doc
from envbuilder.host import Runner
from envbuilder.host.probe import run_command

TIMEOUT_S = 60.0


class Cluster(Protocol):
    def apply(self, docs: Sequence[Mapping[str, Any]], namespace: str) -> list[str]:
        """Create the objects; their kind/name. Raises SchedulerError."""
        ...

    def get_json(self, what: Sequence[str], namespace: str | None = None) -> Any:
        """`kubectl get WHAT -o json`'s answer. Raises SchedulerError."""
        ...

    def job_logs(self, job: str, namespace: str) -> str:
        """The stdout of the Job's pod. Raises SchedulerError."""
        ...


class Kubectl:
    """kubectl, as a user would type it (the current context of the kubeconfig)."""

    def __init__(self, kubectl: str = "kubectl", run: Runner = run_command) -> None:
        self.kubectl = kubectl
        self.run = run

    def _call(self, argv: list[str], what: str) -> str:
        res = self.run([self.kubectl, *argv], TIMEOUT_S)
        if res.returncode != 0:
            said = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1]
            raise SchedulerError(
                f"`kubectl {' '.join(argv)}` failed (exit {res.returncode}): {said}",
                hint=f"{what}: check the kubeconfig (kubectl config current-context) and the cluster",
            )
        return res.stdout

    def apply(self, docs: Sequence[Mapping[str, Any]], namespace: str) -> list[str]:
        with tempfile.TemporaryDirectory(prefix="envbuilder-k8s-") as tmp:
            path = Path(tmp) / "manifests.yaml"
            path.write_text(dump_manifests(docs), encoding="utf-8")
            # create, not apply: the harness ConfigMap is over the 256 KiB that client-side apply's
            # last-applied annotation may hold; each run's objects are new (their names carry it).
            out = self._call(["create", "--namespace", namespace, "-f", str(path), "-o", "name"], "create")
        return [line.strip() for line in out.splitlines() if line.strip()]

    def get_json(self, what: Sequence[str], namespace: str | None = None) -> Any:
        ns = ["--namespace", namespace] if namespace else []
        out = self._call(["get", *what, *ns, "-o", "json"], "get")
        try:
            return json.loads(out)
        except ValueError as exc:
            raise SchedulerError(f"kubectl get {' '.join(what)} did not answer JSON: {exc}") from exc

    def job_logs(self, job: str, namespace: str) -> str:
        return self._call(["logs", "--namespace", namespace, f"job/{job}", "--tail=-1"], "logs")


def _module(name: str) -> Any:
    """A module of the kubernetes client, as Any (its partial type hints are not ours to fix)."""
    return importlib.import_module(name)


class KubeClient:
    """The official `kubernetes` client (python-kubernetes), with the kubeconfig's context."""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        self.client = _module("kubernetes.client")
        self.api_exception: type[Exception] = _module("kubernetes.client.exceptions").ApiException

    def apply(self, docs: Sequence[Mapping[str, Any]], namespace: str) -> list[str]:
        utils = _module("kubernetes.utils")
        created = []
        for doc in docs:
            name = f"{doc.get('kind')}/{doc['metadata']['name']}"
            try:
                utils.create_from_dict(self.api, dict(doc), namespace=namespace)
            except (self.api_exception, utils.FailToCreateError) as exc:
                raise SchedulerError(f"creating {name} failed: {exc}") from exc
            created.append(name.lower())
        return created

    def get_json(self, what: Sequence[str], namespace: str | None = None) -> Any:
        core, batch = self.client.CoreV1Api(self.api), self.client.BatchV1Api(self.api)
        ns = namespace or "default"
        try:
            if list(what) == ["nodes"]:
                obj = core.list_node()
            elif what[0] == "job":
                obj = batch.read_namespaced_job(what[1], ns)
            elif what[0] == "pods":
                obj = core.list_namespaced_pod(ns, label_selector=what[2] if len(what) > 2 else None)
            else:
                raise SchedulerError(f"cannot get {' '.join(what)} through the client")
        except self.api_exception as exc:
            raise SchedulerError(f"getting {' '.join(what)} failed: {exc}") from exc
        return self.api.sanitize_for_serialization(obj)

    def job_logs(self, job: str, namespace: str) -> str:
        core = self.client.CoreV1Api(self.api)
        try:
            pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
            if not pods:
                raise SchedulerError(f"Job {job} has no pod")
            return str(core.read_namespaced_pod_log(pods[-1].metadata.name, namespace))
        except self.api_exception as exc:
            raise SchedulerError(f"reading the logs of Job {job} failed: {exc}") from exc


def cluster() -> Cluster:
    """The kubernetes client where it is installed and a kubeconfig (or in-cluster config) loads,
    else kubectl on PATH. Raises SchedulerError when neither can reach a cluster."""
    why = "the kubernetes client is not installed (pip install 'gpu-envbuilder[k8s]')"
    try:
        config = _module("kubernetes.config")
        try:
            config.load_kube_config()
        except Exception:  # no kubeconfig: perhaps we run in a pod
            config.load_incluster_config()
        return KubeClient(_module("kubernetes.client").ApiClient())
    except ImportError:
        pass
    except Exception as exc:  # ConfigException and friends: no kubeconfig, no in-cluster config
        why = f"the kubernetes client found no cluster ({type(exc).__name__}: {exc})"
    kubectl = shutil.which("kubectl")
    if kubectl:
        return Kubectl(kubectl)
    raise SchedulerError(
        f"no Kubernetes cluster to talk to: {why}, and no kubectl on PATH",
        hint="set up a kubeconfig for the cluster, or render only (without --apply)",
    )


def live_nodes() -> list[K8sNode]:
    """The cluster's nodes, through the kubernetes client (the kubeconfig's context), else kubectl.
    Raises SchedulerError."""
    return nodes_from_doc(cluster().get_json(["nodes"]), "the cluster's nodes")
