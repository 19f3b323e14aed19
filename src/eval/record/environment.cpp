// kloop eval/record: the recorded environment (see environment.hpp).
#include "eval/record/environment.hpp"

#include <filesystem>

#include "kloop/version.hpp"
#include "platform/host_info.hpp"

namespace kloop::eval {

environment_info collect_environment(const evaluation_context& ctx) {
    environment_info e;
    e.host_cpu = platform::cpu_model();
    e.logical_cpus = platform::logical_cpus();
    e.llc_bytes = platform::last_level_cache_bytes();
    e.flags = ctx.spec.build.flags;
    e.kloop_version = build_info::version;
    e.kloop_commit = build_info::git_commit;
    e.kloop_dirty = build_info::git_dirty;
    e.build_type = build_info::build_type;
    const auto git = platform::git_state_of(std::filesystem::absolute(ctx.candidate).parent_path(), ctx.commands);
    e.git_available = git.available;
    e.git_commit = git.commit;
    e.git_dirty = git.dirty;
    return e;
}

}  // namespace kloop::eval
