"""kloop's Python worker: runs Python (numpy / torch / Triton) candidates for kloop.

kloop (the orchestrator, C++) starts ``<python> -m kloop_worker --job JOB.json --events EVENTS.jsonl``
once per gate, bench or A/B run, exactly as it starts the native ``kloop-runner``: the same job
JSON (src/runner/job.hpp, schema_version 1) and the same JSON-lines events
(src/runner/runner.hpp). The worker reports raw facts only; every verdict and every statistic
is computed by kloop, by the code that judges the native runner. See docs/python.md.

Required: the standard library and numpy. Optional: torch (tensors on the GPU, CUDA events,
the kernel census through torch.profiler) and triton.
"""

__version__ = "1"
PROTOCOL_VERSION = 1
