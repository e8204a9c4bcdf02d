"""The Ray executor of `kmicro sweep` and `kmicro bisect --cluster`: each cell a Ray task
that needs one unit of the custom resource `kmicro`, which every node offers once
(`ray start ... --resources '{"kmicro": 1}'`), so two timing jobs never share a node. A node
lost mid-cell: Ray runs the task again on another (max_retries). Only this module imports ray.
"""
import logging
import os
import socket
from urllib.parse import urlparse

from kmicro.core.errors import UsageError

__all__ = ["RESOURCE", "START_HINT", "Ray", "address_from"]

RESOURCE = "kmicro"
START_HINT = ("start each node with `ray start --head` (or `--address HEAD:6379`) and "
              "`--resources '{\"kmicro\": 1}'`")
RETRIES = 3  # runs of a cell whose node died (Ray's max_retries)


def address_from(given):
    """--cluster, else $RAY_ADDRESS, else None (the local executor)."""
    return given or os.environ.get("RAY_ADDRESS") or None


class Ray:
    kind = "ray"

    def __init__(self, address: str):
        try:
            import ray
        except ImportError:
            raise UsageError("--cluster needs Ray: pip install 'kmicro[cluster]'") from None
        self.ray = ray
        _reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                     configure_logging=False)
        except ConnectionError as exc:
            raise UsageError(f"no Ray cluster at {address}: {str(exc).splitlines()[0]}; "
                             + START_HINT) from None
        self.address = address
        if not self.nodes():
            ray.shutdown()
            raise UsageError(f"no node of the Ray cluster at {address} offers the "
                             f"{RESOURCE!r} resource; {START_HINT}")

    def nodes(self) -> list:
        """The ids of the live nodes offering the resource."""
        return sorted(n["NodeID"] for n in self.ray.nodes()
                      if n.get("Alive") and n.get("Resources", {}).get(RESOURCE, 0) >= 1)

    def map(self, fn, cells, on_done):
        ray = self.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        task = ray.remote(_on_node)
        pending = {}
        for n, cell in enumerate(cells):
            options = {"resources": {RESOURCE: 1}, "num_cpus": 0, "max_retries": RETRIES}
            if getattr(cell, "avoid_node", ""):  # an overlap cell: on another node
                others = [node for node in self.nodes() if node != cell.avoid_node]
                if not others:
                    on_done(cell, UsageError("no second node left to measure it again"))
                    continue
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    others[n % len(others)], soft=False)
            pending[task.options(**options).remote(fn, cell)] = cell
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    cell = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        result = exc
                    on_done(cell, result)
        finally:
            for ref in pending:  # Ctrl-C, or an error of the caller: stop the rest
                ray.cancel(ref, force=True)

    def close(self):
        self.ray.shutdown()


def _on_node(fn, cell):
    import ray

    return fn(cell, node_id=ray.get_runtime_context().get_node_id())


def _reachable(address: str):
    """A one-line error, quickly, for an address nothing answers at (Ray itself retries for a
    minute); "auto" is left to Ray, which looks for a cluster started on this machine."""
    if address == "auto" or address.startswith("local"):
        return
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parsed.hostname, parsed.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise UsageError(f"malformed --cluster {address!r}; expected auto, HOST:PORT or "
                         "ray://HOST:PORT")
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise UsageError(f"cannot reach a Ray cluster at {address}: "
                         f"{exc.strerror or exc}") from None
