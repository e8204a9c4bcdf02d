"""The memory fields of a timed record: `peak_bytes` (the most bytes one call holds at once
beyond its inputs and weights, by the backend's own allocator) and `memory_method` (how they
were counted, or why there is no figure). Framework-free: each adapter's `peak_memory`
measures; this only turns its answer, or its failure, into the fields. Python 3.6+."""

__all__ = ["NO_ALLOCATOR", "fields"]

NO_ALLOCATOR = ("not measured: kmicro reads no memory figure here (on Keras 1 and 2 stacks "
                "only Theano's memory profile; none on TensorFlow 1)")


def fields(peak_memory, *args) -> dict:
    """`peak_bytes` and `memory_method` from `peak_memory(*args)` (None: the adapter has
    none), called once, untimed; a failure leaves the time standing and says why."""
    if peak_memory is None:
        return {"peak_bytes": None, "memory_method": NO_ALLOCATOR}
    try:
        held, method = peak_memory(*args)
    except Exception as exc:  # noqa: BLE001 - the time stands without its memory
        return {"peak_bytes": None,
                "memory_method": "failed: {}: {}".format(type(exc).__name__, exc)}
    return {"peak_bytes": held, "memory_method": method}
