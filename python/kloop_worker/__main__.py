"""Entry point: ``python -m kloop_worker --job JOB --events EVENTS`` or ``--probe``."""

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
