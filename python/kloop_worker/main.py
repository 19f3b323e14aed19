"""Command line of the worker.

    python -m kloop_worker --job JOB.json --events EVENTS.jsonl
        Run one job (gate, bench or ab), like kloop-runner. Exit status: 0 when the job ran to
        the end (whatever the candidate did, short of killing the process), 3 when a library
        could not be loaded or the device became unusable (a "fatal" event says why), 2 for a
        bad command line or job.

    python -m kloop_worker --probe --source S --snapshot P --module NAME --device D
                           --role candidate|reference [--triton-cache DIR]
                           [--native-sha256 HEX] --out FACTS.json
        kloop's "build" step for a Python source: the interpreter's and the packages' versions,
        the tensor mode this machine gives the spec's device, the static screen of the source
        (python_source_screen) and whether the snapshot imports; with --native-sha256 the
        snapshot is a native library kloop built (native_library.py): no screen, and whether it
        loads with that hash. Writes one JSON object to
        FACTS.json and exits 0; a problem of the environment is reported in it
        ("environment_error", "missing_module"), as is an import failure ("import_error").

KLOOP_WORKER_PROFILE_DIR=DIR: the run goes under cProfile, written to DIR/<ns>.<role>.prof.

The candidate runs in candidate hosts (candidate_host.py), forked here before the job file is read
and before CUDA is touched (remote_side.fork_hosts): this process is the checker. The start
event's ``candidate_device.isolation`` says so ({"process": "separate", "confined": false, the
hosts' timer calibrations}). KLOOP_PYTHON_SPLIT=0 keeps the candidate in this process
(diagnostics; reported as a shared process, as before). The profile phase (one call under Nsight
Compute, no verdict) always runs the candidate here.

Before the events file is open only the standard library is required: numpy (and torch, for a
device that may be a GPU) are imported then if they can be, for the hosts to share, and a missing
one is reported through the channel rather than as a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import List, Optional

from . import PROTOCOL_VERSION, op_times
from .protocol import EventWriter, JobError, parse_job, start_event


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kloop_worker", description="kloop's Python worker")
    p.add_argument("--job")
    p.add_argument("--events")
    p.add_argument("--probe", action="store_true")
    p.add_argument("--source")
    p.add_argument("--snapshot")
    p.add_argument("--module")
    p.add_argument("--device", default="auto")
    p.add_argument("--role", default="candidate")
    p.add_argument("--triton-cache", default="")
    p.add_argument("--native-sha256", default="")  # the snapshot is a native library with this hash
    p.add_argument("--out")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    profile_dir = os.environ.get("KLOOP_WORKER_PROFILE_DIR")
    if not profile_dir:
        return _main(argv)
    # Diagnostics (bench/python_worker_profile.sh): this process's run under cProfile, one
    # .prof per process named by its role. A forked worker's imports were the server's.
    import cProfile
    import time

    prof = cProfile.Profile()
    prof.enable()
    try:
        return _main(argv)
    finally:
        prof.disable()
        os.makedirs(profile_dir, exist_ok=True)
        prof.dump_stats(os.path.join(profile_dir, "%d.%s.prof" % (time.time_ns(), _role(argv))))


def _role(argv: Optional[List[str]]) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--probe" in args:
        return "probe"
    try:
        with open(args[args.index("--job") + 1], "r", encoding="utf-8") as f:
            return "worker-" + str(json.load(f).get("phase", "unknown"))
    except (ValueError, IndexError, OSError):
        return "worker-unknown"


# Set by fork_server.py in a forked child: this interpreter's modules were imported by the server.
FORKED = False


def leave_the_fork_if_needed(facts, argv: Optional[List[str]] = None, before_exec=None) -> None:
    """A forked worker runs in an interpreter that imported triton with Triton's interpreter off
    (@triton.jit then yields compiled kernels, not interpreted ones, whatever TRITON_INTERPRET
    says later). When this run needs the interpreter (no visible GPU: environment.resolve set
    TRITON_INTERPRET=1), it replaces itself with a fresh interpreter running the same command
    line (`argv`, else sys.argv[1:], which the server sets in its children as `python -m` does):
    the same pid, streams and environment, so the server still reports its end."""
    if not (FORKED and facts.get("triton_interpret") and "triton" in sys.modules):
        return
    if before_exec is not None:
        before_exec()  # the hosts forked from this image: the fresh one forks its own
    sys.stdout.flush()
    sys.stderr.flush()
    args = list(sys.argv[1:] if argv is None else argv)
    os.execv(sys.executable, [sys.executable, "-m", "kloop_worker"] + args)


def limit_memory() -> None:
    """KLOOP_MEMORY_LIMIT_BYTES (kloop's --max-memory-mib, for a worker on the CPU): RLIMIT_DATA
    for this process and the hosts it forks after, so a candidate's allocation past it fails
    (MemoryError) instead of waking the machine's out-of-memory killer."""
    value = os.environ.get("KLOOP_MEMORY_LIMIT_BYTES", "")
    if not value.isdigit() or int(value) <= 0:
        return
    import resource

    n = int(value)
    resource.setrlimit(resource.RLIMIT_DATA, (n, n))


def _main(argv: Optional[List[str]]) -> int:
    args = _parser().parse_args(argv)
    if args.probe:
        return probe(args)
    op_times.start()
    try:
        return _run_worker(args)
    finally:
        op_times.write()


def _run_worker(args) -> int:
    limit_memory()
    if not args.job or not args.events:
        sys.stderr.write("usage: python -m kloop_worker --job JOB.json --events EVENTS.jsonl\n")
        return 2
    hosts = None
    if _split_enabled():
        # Before the job is read: the hosts never hold it, nor the events file.
        from . import remote_side

        try:
            _preload_for(_device_setting_of(args.job))
            hosts = remote_side.fork_hosts(2)
        except Exception as e:  # noqa: BLE001 - reported through the channel below
            hosts = e
    try:
        try:
            with open(args.job, "r", encoding="utf-8") as f:
                job = parse_job(json.load(f))
            job.path = args.job
        except (OSError, ValueError, JobError) as e:
            sys.stderr.write("kloop-worker: error: bad job '%s': %s\n" % (args.job, e))
            return 2
        try:
            events = EventWriter(args.events)
        except OSError as e:
            sys.stderr.write("kloop-worker: error: cannot open events file '%s': %s\n" % (args.events, e))
            return 2
        try:
            if isinstance(hosts, Exception):
                events.write(start_event(job.phase))
                events.write({"event": "fatal", "message": "cannot start the candidate host: %s" % hosts})
                return 3
            return run_job(job, events, hosts=hosts)
        finally:
            events.close()
    finally:
        if hosts is not None and not isinstance(hosts, Exception):
            hosts.close()


def _device_setting_of(job_path: str) -> str:
    """The candidate manifest's ``device`` setting, read by a short-lived child so that this
    process — whose hosts are forked next — never holds the job. "auto" when it cannot say."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            with open(job_path, "r", encoding="utf-8") as f:
                lib = json.load(f).get("candidate_lib", "")
            with open(lib, "r", encoding="utf-8") as f:
                os.write(w, str(json.load(f).get("device", "auto"))[:16].encode("ascii", "replace"))
        except BaseException:  # noqa: BLE001 - the worker reports a bad job itself
            pass
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        data = os.read(r, 64)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode("ascii", "replace") or "auto"


def _preload_for(device: str) -> None:
    """Imports, before the hosts are forked, what both sides will import anyway (numpy; torch
    when the device may be a GPU), so that a fresh interpreter pays them once, not once per
    process. Never triton: whether it must run in its interpreter is decided later
    (environment.resolve). Under the fork server these are already imported. Never touches CUDA."""
    for name in ("numpy",) + (("torch",) if device in ("cuda", "auto") else ()):
        if name in sys.modules:
            continue
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - resolve() reports what is missing
            pass


def _split_enabled() -> bool:
    """KLOOP_PYTHON_SPLIT=0 keeps the candidate in this process (diagnostics)."""
    return os.environ.get("KLOOP_PYTHON_SPLIT", "1") != "0"


def run_job(job, events, hosts=None, split: Optional[bool] = None) -> int:
    """Runs one job and writes its events. ``hosts``: candidate hosts forked before the job was
    read (main); without them, and unless ``split`` is False (or KLOOP_PYTHON_SPLIT=0), they are
    forked here — a caller that already holds the job in memory (tests) gives it to them
    copy-on-write, which the command line never does."""
    try:
        rc = _run_job(job, events, hosts, split)
    finally:
        if hosts is not None:
            hosts.close()
    # The hosts are gone: the events file must hold the worker's lines and nothing else.
    if hasattr(events, "untouched") and not events.untouched():
        events.restore()
        events.write({"event": "fatal", "message": "the events file was changed by another process while the candidate "
                                                   "ran; the worker's own lines were restored"})
        return 3
    if rc == 0:
        events.write({"event": "done"})
    return rc


def _run_job(job, events, hosts, split: Optional[bool]) -> int:
    from . import environment

    if split is None:
        split = hosts is not None or _split_enabled()
    if job.phase == "profile":
        split = False  # one call under Nsight Compute, no verdict: the candidate runs here
    if not split and hosts is not None:
        hosts.keep(0)
        hosts = None

    # The run's settings come with the candidate's manifest (the spec's [python] table).
    settings = {}
    try:
        with open(job.candidate_lib, "r", encoding="utf-8") as f:
            settings = json.load(f)
    except (OSError, ValueError) as e:
        events.write({"event": "fatal", "message": "cannot read the library manifest '%s': %s" % (job.candidate_lib, e)})
        return 3
    facts = environment.resolve(settings.get("device", "auto"))
    leave_the_fork_if_needed(facts, before_exec=hosts.close if hosts is not None else None)
    if "environment_error" in facts:
        events.write(start_event(job.phase, worker=facts))
        events.write({"event": "fatal", "message": "cannot use the device: " + facts["environment_error"]})
        return 3
    allow_tf32 = bool(settings.get("allow_tf32", False))
    owned_hosts = None
    try:
        from . import worker as worker_mod

        if split and hosts is None:
            from . import remote_side

            hosts = owned_hosts = remote_side.fork_hosts(2 if job.phase == "ab" else 1)
        backend = environment.make_backend(facts)
        flags = worker_mod.make_flags(backend, allow_tf32)
        timer = None if split else worker_mod.make_timer(backend)
    except Exception as e:
        traceback.print_exc()
        if owned_hosts is not None:
            owned_hosts.close()
        events.write({"event": "fatal", "message": "cannot use the device: %s: %s" % (type(e).__name__, e)})
        return 3
    try:
        return _run_with(job, events, facts, backend, flags, timer, hosts, allow_tf32)
    finally:
        if owned_hosts is not None:
            owned_hosts.close()


def _manifest_or_nothing(path: str):
    """A library's manifest for its host's confinement; one that cannot be read gives no source
    trees to read (its load then fails with the reason)."""
    from .candidate import LoadError, read_manifest

    try:
        return read_manifest(path)
    except (OSError, ValueError, LoadError):
        return {}


def _run_with(job, events, facts, backend, flags, timer, hosts, allow_tf32: bool) -> int:
    from . import worker as worker_mod

    facts["numeric_flags"] = flags.expected()
    facts["protocol"] = PROTOCOL_VERSION
    start = start_event(job.phase, worker=facts)
    buffers_backend = backend
    if hosts is not None:
        from . import remote_side
        from .shared_buffers import SharedAllocator

        hosts.keep(2 if job.phase == "ab" else 1)
        # Before any candidate code runs (the hosts wait, stopped): no ptrace, no /proc/<pid>/mem
        # or /proc/<pid>/fd of this process for them or what they start.
        remote_side.protect_checker()
        buffers_backend = SharedAllocator(backend)
        hosts.attach(buffers_backend)
        try:
            for h in hosts.hosts:
                h.setup(facts, allow_tf32)
                h.calibrate()
            device = hosts[0].describe()
            # Last, before the candidate is imported: each host locks itself down for its library.
            hidden = [getattr(job, "path", ""), getattr(events, "path", "")]
            for h, lib in zip(hosts.hosts, [job.candidate_lib, job.base_lib]):
                h.confine(_manifest_or_nothing(lib), hidden)
        except (remote_side.HostDied, remote_side.HostRefused) as e:
            events.write(start)
            events.write({"event": "fatal", "message": "cannot use the device in the candidate host: %s" % e,
                          "candidate_died": isinstance(e, remote_side.HostDied)})
            return 3
        device["isolation"] = hosts.isolation_facts()
    else:
        device = timer.describe()
    start["candidate_device"] = device
    start["reference_device"] = device
    events.write(start)
    w = worker_mod.Worker(job, events, buffers_backend, timer, flags, hosts)
    try:
        w.load()
    except worker_mod.Fatal as e:
        events.write(_fatal_event(e))
        return 3
    except Exception as e:
        events.write({"event": "fatal", "message": worker_mod.format_load_error(e)})
        return 3
    try:
        w.run()
    except worker_mod.Fatal as e:
        events.write(_fatal_event(e))
        return 3
    except Exception as e:  # a bug in the worker, or a device that failed in kloop's own code
        traceback.print_exc()
        events.write({"event": "fatal", "message": "kloop worker error: %s: %s" % (type(e).__name__, e)})
        return 3
    return 0  # run_job writes "done" once the hosts are gone and the events file is verified


def _fatal_event(e) -> dict:
    event = {"event": "fatal", "message": str(e)}
    if getattr(e, "candidate_died", False):
        event["candidate_died"] = True
    return event


def _probe_native(args, facts) -> None:
    """A native library (native_library.py): no source screen (its imported symbols are checked
    instead, by kloop), a load with the hash checked."""
    from .candidate import LoadError
    from .native_library import NativeLibrary

    facts["native"] = True
    manifest = {"source": args.source, "snapshot": args.snapshot, "native": True, "native_sha256": args.native_sha256}
    try:
        NativeLibrary(manifest, LoadError)
    except LoadError as e:
        facts["import_error"] = str(e)


def probe(args) -> int:
    if not args.out or not args.source or not args.snapshot:
        sys.stderr.write("usage: python -m kloop_worker --probe --source S --snapshot P --module M --out FILE\n")
        return 2
    from . import environment

    facts = environment.resolve(args.device)
    leave_the_fork_if_needed(facts)
    facts["protocol"] = PROTOCOL_VERSION
    if "environment_error" not in facts and args.native_sha256:
        _probe_native(args, facts)
    elif "environment_error" not in facts:
        from . import screen

        try:
            with open(args.snapshot, "r", encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            text = ""
            facts["import_error"] = "cannot read '%s': %s" % (args.snapshot, e)
        if args.role == "candidate":
            facts["screen"] = screen.screen_source(text, os.path.basename(args.source))
        if "import_error" not in facts:
            from .candidate import LoadError, import_library

            manifest = {
                "source": args.source,
                "snapshot": args.snapshot,
                "module": args.module or "kloop_probe",
                "triton_cache_dir": args.triton_cache,
            }
            try:
                module = import_library(manifest)
                facts["functions"] = sorted(
                    n for n, v in vars(module).items() if callable(v) and not n.startswith("__")
                )
            except LoadError as e:
                facts["import_error"] = str(e)
                cause = e.__cause__
                if cause is not None:
                    facts["import_traceback"] = "".join(
                        traceback.format_exception(type(cause), cause, cause.__traceback__)
                    )[-6000:]
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                facts["import_error"] = "%s: %s" % (type(e).__name__, e)
    tmp = args.out + ".tmp-%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1, default=str)
    os.replace(tmp, args.out)
    return 0
