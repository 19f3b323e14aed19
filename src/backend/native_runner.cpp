// kloop backend: the native runner's launch and the imported-symbols check (see native_runner.hpp).
#include "backend/native_runner.hpp"

#include "check/imported_symbols.hpp"
#include "platform/paths.hpp"

namespace kloop::backend {

void launch_native_runner(platform::process_request& req, const launch_inputs& in, const std::string& tool) {
    for (auto a : {platform::sibling_tool(tool).string(), std::string("--job"), in.job_path.string(),
                   std::string("--events"), in.events_path.string()})
        req.argv.push_back(std::move(a));
    // The CUDA runner maps device memory into its address space: only the CPU runner is capped.
    if (tool == "kloop-runner" && !in.wrapped) req.memory_limit_bytes = in.max_memory_bytes;
}

eval::integrity_check imported_symbols_check(const std::filesystem::path& library) {
    eval::integrity_check c{"imported_symbols", eval::check_status::pass, ""};
    try {
        const auto table = check::read_dynamic_symbols(library);
        const auto findings = check::classify_imports(table);
        c.detail = check::describe_findings(findings, table);
        for (const auto& f : findings) {
            if (f.severity == check::finding_severity::fail) {
                c.status = eval::check_status::fail;
                break;
            }
            c.status = eval::check_status::warn;
        }
    } catch (const std::exception& e) {
        // An object kloop built and cannot read is not one it can vouch for.
        c.status = eval::check_status::fail;
        c.detail = e.what();
    }
    return c;
}

void native_backend::launch(platform::process_request& req, const launch_inputs& in) const {
    launch_native_runner(req, in, runner_tool_for(in.job.candidate_device, in.job.reference_device));
}

eval::integrity_check native_backend::artefact_check(const build_record& candidate) const {
    return imported_symbols_check(candidate.library);
}

}  // namespace kloop::backend
