// kloop eval: the device slots of `--devices` (see visible_devices.hpp).
#include "eval/visible_devices.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "platform/gpu_facts.hpp"

namespace kloop::eval {

namespace {

// The non-empty fields of a comma list, trimmed.
std::vector<std::string> comma_list(const std::string& text) {
    std::vector<std::string> out;
    for (auto& f : split_fields(text, ','))
        if (!f.empty()) out.push_back(std::move(f));
    return out;
}

bool all_digits(const std::string& s) {
    return !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos;
}

// The GPUs there are: $KLOOP_DEVICES, else the CUDA runner's probe (UUIDs).
std::vector<std::string> discovered(platform::command_runner_base& commands) {
    if (const char* e = std::getenv("KLOOP_DEVICES"); e != nullptr && *e != '\0') return comma_list(e);
    const auto argv = backend::backend_for(spec::backend_kind::cuda).device_probe_command();
    if (argv.empty())
        throw usage_error("option --devices: this kloop has no CUDA runner to ask for the GPUs; name them "
                          "(--devices GPU-…,GPU-…) or set KLOOP_DEVICES");
    platform::process_request req;
    req.argv = argv;
    req.timeout_s = 60;
    const auto r = commands.run(req);
    if (!r.succeeded())
        throw usage_error("option --devices: the GPU probe '" + argv.front() + "' " + r.describe() +
                          "; name the devices or set KLOOP_DEVICES");
    std::vector<std::string> out;
    try {
        for (const auto& g : platform::gpu_probe_from_json(r.stdout_text).gpus)
            if (!g.uuid.empty()) out.push_back(g.uuid);
    } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("option --devices: the GPU probe's answer: ") + e.what());
    }
    if (out.empty()) throw usage_error("option --devices: the GPU probe reports no GPU");
    return out;
}

}  // namespace

std::vector<platform::device_slot> visible_devices(const spec::op_spec& spec, const std::string& option,
                                                   platform::command_runner_base& commands) {
    if (option.empty() || option == "1") return {platform::device_slot{"", "default"}};
    std::vector<std::string> ids;
    if (option == "all" || all_digits(option)) {
        ids = discovered(commands);
        if (option != "all") {
            const auto n = static_cast<std::size_t>(std::stoul(option));
            if (n == 0) throw usage_error("option --devices: 0 devices");
            if (n > ids.size())
                throw usage_error(fmt::format("option --devices {}: only {} device(s) visible ({})", option, ids.size(),
                                              fmt::join(ids, ", ")));
            ids.resize(n);
        }
    } else {
        ids = comma_list(option);
        for (std::size_t i = 0; i < ids.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (ids[i] == ids[j]) throw usage_error("option --devices: '" + ids[i] + "' is named twice");
    }
    if (ids.size() > 1 && spec.blackbox)
        throw usage_error("option --devices: a black-box op runs its commands with kloop's own CUDA_VISIBLE_DEVICES; "
                          "use one device (set CUDA_VISIBLE_DEVICES to choose it)");
    const bool fake = std::getenv("KLOOP_DEVICES") != nullptr && *std::getenv("KLOOP_DEVICES") != '\0';
    if (ids.size() > 1 && spec.backend == spec::backend_kind::cpu && !fake)
        throw usage_error("option --devices: a CPU op is timed on the host, one timed run at a time");
    std::vector<platform::device_slot> slots;
    for (const auto& id : ids) slots.push_back({id, id});
    return slots;
}

}  // namespace kloop::eval
