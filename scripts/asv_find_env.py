"""Print the name of the asv environment that runs one backend, for `asv find -E NAME`.

  python scripts/asv_find_env.py jax [asv.conf.json]

asv find bisects only the first environment it selects. `-E virtualenv:3.11` selects the Keras 3
environment once per KERAS_BACKEND (tensorflow first), and `-E virtualenv:3.9` builds the Keras 3
matrix on Python 3.9 instead of selecting the theano `include`; an environment's full name
selects exactly that one. Run with the stacks' Pythons on PATH (the Makefile's ASV_PATH): asv
leaves out an environment whose Python it cannot find. Exit 2 on an unknown backend.
"""
import sys

from asv.config import Config
from asv.environment import get_environments


def env_names(config_path) -> dict:
    """{KERAS_BACKEND: environment name} of every environment the config declares."""
    envs = get_environments(Config.load(config_path), None, False)
    return {e.env_vars.get("KERAS_BACKEND"): e.name for e in envs}


def main(argv) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    names = env_names(argv[1] if len(argv) == 2 else "asv.conf.json")
    if argv[0] not in names:
        print(f"asv_find_env: no environment for backend {argv[0]!r}; valid: "
              f"{', '.join(names)}", file=sys.stderr)
        return 2
    print(names[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
