"""One module per job kind the worker runs: op (a layer case's passes), calibrate (kmicro's
loop against a bare one), model (a training epoch), attribution (a model's step and its
layers), graph (facts from a compiled graph). Each has `run(adapter, info, job)`, yielding
the job's records; the runner-side helpers for a kind live with it."""
