"""Full-model epoch timing (`kmicro models`): the reports' models, data, and tables.

Framework-free: model specs (graph.py, zoo.py), data and augmentation, epoch arithmetic and
the timing loop run inside every stack's worker (Python 3.7+); kmicro/report/models.py and
kmicro/cli/models.py are the CLI side. The backends translate specs in
kmicro/backends/keras{2,3}/models.py.
"""
