// kloop backend/blackbox: the black-box backend (see blackbox_backend.hpp).
#include "backend/blackbox/blackbox_backend.hpp"

#include "backend/blackbox/blackbox_evaluation.hpp"
#include "core/error.hpp"

namespace kloop::backend::blackbox {

namespace {

class repository_pipeline final : public pipeline {
public:
    [[nodiscard]] eval::evaluation evaluate(const eval::evaluation_context& ctx) const override {
        return blackbox::evaluate(ctx);
    }
    [[nodiscard]] eval::ab_evaluation compare(const eval::ab_context& ctx) const override { return blackbox::compare(ctx); }
    [[nodiscard]] eval::ab_evaluation retime(const eval::ab_context& ctx, const eval::ab_evaluation& gated,
                                             int run) const override {
        return blackbox::retime(ctx, gated, run);
    }
};

[[noreturn]] void not_a_runner_backend(const char* what) {
    throw internal_error(std::string("the black-box backend has no ") + what + ": it runs its own pipeline");
}

class blackbox_backend_impl final : public op_backend {
public:
    [[nodiscard]] std::string_view name() const override { return "blackbox"; }

    [[nodiscard]] const pipeline* own_pipeline() const override { return &m_pipeline; }

    [[nodiscard]] source_plan plan(const spec::op_spec& spec, const std::filesystem::path& source,
                                   source_role role) const override {
        return backend_for(spec.backend).plan(spec, source, role);
    }

    [[nodiscard]] std::vector<std::filesystem::path> header_dirs(const spec::op_spec& spec) const override {
        return backend_for(spec.backend).header_dirs(spec);
    }

    [[nodiscard]] build_record build(const build_inputs&) const override { not_a_runner_backend("build"); }
    void launch(platform::process_request&, const launch_inputs&) const override { not_a_runner_backend("runner"); }
    [[nodiscard]] eval::integrity_check artefact_check(const build_record&) const override {
        not_a_runner_backend("artefact");
    }
    [[nodiscard]] bool timed_on_gpu(const eval::build_summary&) const override { return false; }

    [[nodiscard]] std::string profile_unavailable(const spec::op_spec&) const override {
        return "a black-box op: kloop runs its commands, not its kernels, so it cannot profile them";
    }

private:
    repository_pipeline m_pipeline;
};

}  // namespace

const op_backend& blackbox_backend() {
    static const blackbox_backend_impl instance;
    return instance;
}

}  // namespace kloop::backend::blackbox
