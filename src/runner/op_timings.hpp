// kloop runner: where the checker's wall time goes, per kind of operation (a diagnostic).
//
// Responsibility: accumulate count and wall time per named operation ("host:time",
// "checker:download", …) and, when KLOOP_OP_TIMES names a file, append them there as one JSON
// line when the object dies. remote_executor times every request to a candidate host and every
// copy or fill it makes on the checker's side, so a slow bench can be taken apart on the machine
// that shows it (docs/measurement.md, "Where a bench's wall time goes"). Costs two clock reads per
// operation; nothing is written unless the variable is set. The runner's bench loops add enclosing
// phases ("phase:prepare", "phase:guards", "phase:checked_call"), which contain the operations
// above: a phase's time is not to be added to theirs.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace kloop::runner {

class op_timings {
public:
    // The process's one set of totals (written when the process ends normally).
    static op_timings& process();

    op_timings();
    ~op_timings();
    op_timings(const op_timings&) = delete;
    op_timings& operator=(const op_timings&) = delete;

    // Whether KLOOP_OP_TIMES is set: callers that build a name per operation check it first.
    [[nodiscard]] bool enabled() const { return !m_path.empty(); }
    // Adds one operation of `name` that took `seconds`.
    void add(std::string_view name, double seconds);

    // Times a scope: op_timings::scope s(timings, "checker:fill");
    class scope {
    public:
        scope(op_timings& t, const char* name) : m_t(t), m_name(name), m_start(std::chrono::steady_clock::now()) {}
        ~scope() {
            m_t.add(m_name, std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count());
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;

    private:
        op_timings& m_t;
        const char* m_name;
        std::chrono::steady_clock::time_point m_start;
    };

private:
    struct total {
        long long count = 0;
        double seconds = 0;
    };
    std::map<std::string, total, std::less<>> m_totals;
    std::string m_path;  // KLOOP_OP_TIMES; empty: nothing is written
    std::chrono::steady_clock::time_point m_born;
};

}  // namespace kloop::runner
