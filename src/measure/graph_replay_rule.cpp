// kloop eval: the graph replay rule (see graph_replay_rule.hpp).
#include "measure/graph_replay_rule.hpp"

#include <cmath>

#include <fmt/format.h>

namespace kloop::measure {

std::string graph_replay_refusal(const graph_replay_facts& f) {
    if (f.calls == 0) return "no call was captured";
    if (f.kernel_nodes < f.calls)
        return fmt::format("the captured graph holds {} kernel node(s) for {} calls: a call enqueued no kernel on the "
                           "stream it was given (work on another stream is not in the graph)",
                           f.kernel_nodes, f.calls);
    if (f.outputs_checked && f.poisoned_left > 0)
        return fmt::format("after a replay into poisoned outputs, {} output element(s) still held the poison (first: "
                           "{}): the graph does not compute the outputs",
                           f.poisoned_left, f.first_poisoned);
    if (!(std::isfinite(f.per_call_s) && f.per_call_s > 0))
        return fmt::format("the replay time per call is {} s, not a time", f.per_call_s);
    if (f.eager_median_s > 0 && f.per_call_s < graph_min_fraction_of_eager * f.eager_median_s)
        return fmt::format("the replay took {:.4g} us per call, under {:.0f} % of the eager median {:.4g} us: not "
                           "the call's work",
                           f.per_call_s * 1e6, graph_min_fraction_of_eager * 100, f.eager_median_s * 1e6);
    return "";
}

}  // namespace kloop::measure
