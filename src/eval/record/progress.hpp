// kloop eval/record: what long work reports while it runs, and who listens.
//
// Responsibility: the seam between the pipelines (builds, a runner's gate cases, bench shapes,
// A/B shapes, profiles: eval/, loop/) and whatever shows their progress (the command line's
// live display, cli/progress_display). A pipeline that is given a sink (evaluation_options::
// progress; null: nobody listens) tells it each step as it starts, moves and ends. An update is
// never part of a record, a check or a verdict: it only says where the work is. Updates may
// come from more than one thread (the A/B gates both sides at once, a runner's events are
// followed on their own thread): a sink serialises them itself.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace kloop::eval {

struct progress_update {
    std::string step;      // "build", "gate", "bench", "A/B", "profile"
    std::string subject;   // what the step works on: a file name, "fwd/4096x4096", "fwd/4096x4096 trial 2"
    int index = 0;         // the item's place in its step, from 1 (0: not counted)
    int count = 0;         // the step's items (0: not counted)
    // The stopping rule's state of a timed item, when the runner reported it.
    std::optional<int> samples;
    std::optional<double> timed_s;
    std::optional<double> rel_stdev, target_rel_stdev;
    std::string state;     // a word or two: "compiling", "warmup", "timing", "reference", …
    bool finished = false; // the step is over; `state` says how ("ok", "failed", "cached")
};

class progress_sink {
public:
    virtual ~progress_sink() = default;
    void update(const progress_update& u) { do_update(u); }

protected:
    virtual void do_update(const progress_update& u) = 0;
};

// A sink that passes every update on to another (which may be null) with its subject prefixed,
// e.g. "base: " — for work done twice over, such as the A/B's two gates.
class prefixed_progress final : public progress_sink {
public:
    prefixed_progress(progress_sink* next, std::string prefix) : m_next(next), m_prefix(std::move(prefix)) {}

protected:
    void do_update(const progress_update& u) override {
        if (!m_next) return;
        auto v = u;
        v.subject = m_prefix + v.subject;
        m_next->update(v);
    }

private:
    progress_sink* m_next;
    std::string m_prefix;
};

// Tells `sink` (which may be null) of `u`.
inline void report_progress(progress_sink* sink, const progress_update& u) {
    if (sink) sink->update(u);
}

}  // namespace kloop::eval
