// kloop measure: whether a CUDA-graph replay figure may be reported (the GPU executor's
// graph_replay_s_per_call, docs/measurement.md "GPU timing protocol" step 7).
//
// Responsibility: the pure decision, given what the executor found after capturing N calls into
// one graph and replaying it. The figure is refused — no graph_replay_s_per_call, and
// graph_replay_error says why — when the graph cannot be the candidate's work:
//   - fewer kernel nodes than captured calls (a call that enqueued nothing on the captured stream,
//     or put its work on another stream — the per-thread default stream, a stream of its own —
//     which ran once during the capture and is not in the graph);
//   - after a replay into poisoned outputs, some float output element still holds the poison
//     (the graph does not write what the call must write);
//   - the replay time per call is below graph_min_fraction_of_eager of the eager (cold) median.
// Host-only, no CUDA: the executor (backend/cuda/cuda_executor.cpp) gathers the facts.
#pragma once

#include <cstdint>
#include <string>

namespace kloop::measure {

// Why 1/20: the replay is hot and back to back (no flush, no event pair, no launch latency), so
// it is legitimately faster than the eager median — up to ~3x for a kernel whose data stays in
// L2 between replays, and a few x for a sub-microsecond kernel whose eager median is mostly the
// event pair's ~1.3 µs floor. Each graph kernel node still costs the GPU some 0.5–1 µs, so a
// per-call figure 20x under an eager median of at most 20 µs is not a kernel's run time.
inline constexpr double graph_min_fraction_of_eager = 0.05;

struct graph_replay_facts {
    std::uint64_t calls = 0;             // calls captured into the graph
    std::uint64_t kernel_nodes = 0;      // kernel nodes in the graph, child graphs included
    double per_call_s = 0;               // median replay time / calls
    double eager_median_s = 0;           // the cold samples' median
    bool outputs_checked = false;        // a replay into poisoned outputs was made and read back
    std::uint64_t poisoned_left = 0;     // float output elements still holding the poison after it
    std::string first_poisoned;          // "output 'y' of input set 0", when poisoned_left > 0
};

// "" when the figure may be reported; else the reason, one sentence.
[[nodiscard]] std::string graph_replay_refusal(const graph_replay_facts& f);

}  // namespace kloop::measure
