"""Where `kmicro sweep` runs its cells: `Local` here, one after another, or `Ray` on a cluster
(kmicro.harness.ray_cluster). Both call `fn(cell, node_id=...)` for each cell and hand each
cell's result (its records, or the exception that ended it) to `on_done(cell, result)` as
soon as it is in, so the caller can keep finished cells whatever happens to the rest.
"""
import socket

__all__ = ["Local"]


class Local:
    """This machine, one cell after another; nothing to start."""

    kind = "local"

    def __init__(self):
        self.node_id = f"local:{socket.gethostname()}"

    def nodes(self) -> list:
        return [self.node_id]

    def map(self, fn, cells, on_done):
        for cell in cells:
            try:
                result = fn(cell, node_id=self.node_id)
            except Exception as exc:  # noqa: BLE001 - one cell's failure, not the sweep's
                result = exc
            on_done(cell, result)

    def close(self):
        pass
