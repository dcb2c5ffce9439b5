"""The Ray cluster a run's agents go to (issue 15): the host's one connection to it, the
actor class every agent's actor is made from, and what an actor asks of a node.

An actor asks for the role card's `resources:` (`LaunchSpec.resources`, Ray's names as
the card load checked them), else the settings' `numCpus` (a quarter of a CPU unless
said: an agent mostly waits on its model) and `[cluster.resources]`, and is spread over
the nodes. `unfit` says when no live node could ever hold it — what tells a launch that
waits for room (queued) from one that waits for nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from legion_tui.settings import ClusterSettings
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.ray.actor import NodeAgent, Shipment
from legion_tui.timeouts import within

__all__ = [
    "REACH_S",
    "actor_options",
    "asked_for",
    "connect",
    "create_actor",
    "reach",
    "unfit",
]

# How long the host waits for a cluster's address to answer at all. ray.init runs on the
# main thread and, against an address where nothing answers, blocks it for 45 s with
# SIGTERM unheard (issue 30): the address is tried first, on the loop, within this bound.
REACH_S = 5.0

_actor_class: Any = None

# Ray takes these two as keywords; every other name is a custom resource.
_RAY_KEYWORDS = {"CPU": "num_cpus", "GPU": "num_gpus"}

# The live nodes' total resources, asked of the cluster at most once per this many s: a
# hundred queued launches look at the same answer, not a hundred GCS calls.
NODES_TTL_S = 2.0
_nodes: tuple[float, list[dict[str, float]]] = (-1e18, [])


async def reach(cluster: ClusterSettings, bound: float = REACH_S) -> None:
    """RuntimeError unless something answers at the cluster's address within `bound`
    (`auto` is Ray's own lookup of a local cluster, which fails fast)."""
    import ray

    if ray.is_initialized() or cluster.address == "auto":
        return
    host, _, port = cluster.address.removeprefix("ray://").rpartition(":")
    try:
        _reader, writer = await within(asyncio.open_connection(host.strip("[]"), int(port)), bound)
    except ValueError:
        raise RuntimeError(f"cannot reach the Ray cluster at {cluster.address}: not "
                           "HOST:PORT, ray://HOST:PORT or auto") from None  # fmt: skip
    except TimeoutError:
        raise RuntimeError(f"cannot reach the Ray cluster at {cluster.address}: nothing "
                           f"answered within {bound:g} s") from None  # fmt: skip
    except OSError as err:  # asyncio's own text names the address again: the errno's
        why = os.strerror(err.errno) if err.errno else str(err)
        raise RuntimeError(f"cannot reach the Ray cluster at {cluster.address}: {why}") from None
    writer.close()


def connect(cluster: ClusterSettings) -> Any:
    """Ray, connected to the cluster the settings name (once per process)."""
    global _actor_class
    try:
        import ray
    except ImportError as err:
        raise RuntimeError(
            '[cluster] engine = "ray" needs Ray: pip install "legion-tui[ray]"'
        ) from err
    if not ray.is_initialized():
        # ray.init takes SIGTERM for itself (a driver's becomes sys.exit(15), and Ray's
        # core puts its crash handler, which prints a stack, in front): a SIGTERM then
        # unwound the host mid-write, its pause unrecorded and its agents left orphaned
        # in the ledger. The host's own handler goes back: SIGTERM pauses, as without Ray.
        host_handler = signal.getsignal(signal.SIGTERM)
        # Blocks the host's loop for the connection (≈1 s, once): ray.init must run on
        # the main thread.
        try:
            ray.init(address=cluster.address, log_to_driver=False)
        except Exception as err:  # Ray Client says only "ray client connection timeout"
            raise RuntimeError(
                f"cannot reach the Ray cluster at {cluster.address}: {err}"
            ) from err
        finally:
            if host_handler is not None:  # None: not one Python set (nothing to give back)
                signal.signal(signal.SIGTERM, host_handler)
    if _actor_class is None:
        _actor_class = ray.remote(max_restarts=0, max_task_retries=0)(NodeAgent)
    return ray


def create_actor(
    ray: Any, options: Mapping[str, Any], spec: LaunchSpec, shipment: Shipment
) -> Any:
    """A `NodeAgent` actor for `spec` (Ray queues it until some node has room); call
    `connect` first."""
    assert _actor_class is not None, "connect() first"
    return _actor_class.options(**options).remote(spec, ray.put(shipment))


def actor_options(
    cluster: ClusterSettings, resources: Mapping[str, float] | None
) -> dict[str, Any]:
    """The actor's Ray options: the role card's `resources:` (CPU, GPU and custom
    names, as the card load checked them), else the settings' `numCpus` and
    `[cluster.resources]`; spread over the nodes."""
    options: dict[str, Any] = {
        "scheduling_strategy": "SPREAD",  # a legion's agents over all the nodes
        "num_cpus": cluster.num_cpus,  # unless the card names its CPUs
    }
    asked = cluster.resources if resources is None else resources
    custom = {name: amount for name, amount in asked.items() if name not in _RAY_KEYWORDS}
    for name, keyword in _RAY_KEYWORDS.items():
        if name in asked:
            options[keyword] = asked[name]
    if custom:
        options["resources"] = custom
    return options


def asked_for(options: Mapping[str, Any]) -> str:
    """`2 CPUs, 1 GPU and {'box': 1.0}`: what an actor asked for, for a refusal."""
    cpus = options.get("num_cpus", 1)
    parts = [f"{cpus:g} CPU{'' if cpus == 1 else 's'}"]
    gpus = options.get("num_gpus")
    if gpus:
        parts.append(f"{gpus:g} GPU{'' if gpus == 1 else 's'}")
    if options.get("resources"):
        parts.append(str(options["resources"]))
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _live_nodes(ray: Any) -> list[dict[str, float]]:
    """Each live node's total resources ({"CPU": 2.0, …}), as of at most NODES_TTL_S ago."""
    global _nodes
    at, nodes = _nodes
    now = time.monotonic()
    if now - at >= NODES_TTL_S:
        nodes = [dict(n.get("Resources") or {}) for n in ray.nodes() if n.get("Alive")]
        _nodes = (now, nodes)
    return nodes


def unfit(ray: Any, options: Mapping[str, Any]) -> str | None:
    """Why no live node of the cluster could hold an actor asking `options` even with
    nothing else on it, or None when one could (then a launch waits only for room)."""
    asked = {"CPU": float(options.get("num_cpus", 1)), "GPU": float(options.get("num_gpus", 0)),
             **options.get("resources", {})}  # fmt: skip
    asked = {name: amount for name, amount in asked.items() if amount > 0}
    nodes = _live_nodes(ray)
    if any(all(node.get(name, 0.0) >= amount for name, amount in asked.items())
           for node in nodes):  # fmt: skip
        return None
    most = max((node.get("CPU", 0.0) for node in nodes), default=0.0)
    return (f"no node of the cluster could hold it: it asks for {asked_for(options)}; "
            f"{len(nodes)} live node{'' if len(nodes) == 1 else 's'}, the most CPUs on one "
            f"{most:g}")  # fmt: skip
