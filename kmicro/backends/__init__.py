"""Backend adapters: the only modules that import a deep-learning framework.

Each is imported inside a worker process, never by the CLI or the runner.
"""
