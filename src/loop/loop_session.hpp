// kloop loop: opening a workspace for a command — contract check, records, repair.
//
// Responsibility: the first thing every command after `kloop init` does. open_session()
//   1. reads contract.json (refusing a hand-edited one) and re-hashes every frozen file —
//      kloop::contract_error, exit 5, naming the file and both hashes, on any change;
//   2. for a writing command takes the workspace lock (one writer at a time) — a reading
//      command takes it when free;
//   3. with the lock: records as rejected the candidate a dead kloop was evaluating
//      (loop/evaluation_marker), removes .staging-* directories a killed command left, and
//      appends the OPT_LOG.md rows of recorded iterations that lack one;
//   4. loads every iteration record (iter_v0 .. iter_vN; each appeared in one rename).
// reconcile_memory() re-records every iteration in the strategy memory (idempotent), which
// repairs a command killed between writing an iteration and recording it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "loop/record/contract.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/strategy_memory.hpp"
#include "loop/workspace.hpp"

namespace kloop::loop {

enum class access { read, write };

struct loop_session {
    workspace ws;
    contract c;
    std::vector<iteration_record> records;       // index == iteration number
    std::shared_ptr<workspace_lock> lock;        // held for access::write (maybe for read)
    record_origin origin;
    std::vector<std::string> repairs;            // what step 3 fixed, for the output

    [[nodiscard]] memory_key key() const { return {c.op, c.backend, c.device, c.shape_set}; }
    [[nodiscard]] const iteration_record& baseline() const { return records.front(); }
};

// `held`: the workspace lock the caller already holds (`kloop init`; `kloop run`, which keeps it
// across its iterations and while its proposer runs), used instead of a new one.
[[nodiscard]] loop_session open_session(const std::filesystem::path& root, access a, record_origin origin,
                                        std::shared_ptr<workspace_lock> held = nullptr);

// Reads iter_vN/benchmark_result.json.
[[nodiscard]] iteration_record load_iteration(const workspace& ws, int n);

[[nodiscard]] memory_row memory_row_of(const loop_session& s, const iteration_record& r);
// Records every iteration of the session that the memory lacks; returns how many.
int reconcile_memory(const loop_session& s, strategy_memory& memory);

// run_manifest.json: the index of the workspace (rewritten by every writing command).
void write_manifest(const loop_session& s, const std::filesystem::path& memory_db);

// Per-iteration bench options from the contract (trials, every mode) and the caller's stopping rule.
[[nodiscard]] eval::evaluation_options contract_options(const contract& c, eval::evaluation_options base);

}  // namespace kloop::loop
