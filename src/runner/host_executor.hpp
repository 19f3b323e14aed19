// kloop runner: the CPU executor — buffers used in place, a steady clock, a cache-sized flush.
#pragma once

#include <vector>

#include "runner/executor.hpp"

namespace kloop::runner {

class host_executor final : public executor_base {
protected:
    kl_device do_get_device() const override { return KL_HOST; }
    void* do_allocate(std::size_t) override;
    void do_release(void*) noexcept override {}
    void do_upload(void*, const void*, std::size_t) override;
    void do_download(void*, const void*, std::size_t) override;
    call_outcome do_invoke(entry_fn f, const kl_args& a) override;
    void do_flush_caches(std::uint64_t bytes) override;
    double do_time_call(entry_fn f, const kl_args& a, call_outcome& outcome) override;
    void do_describe(nlohmann::json& out) const override;

private:
    std::vector<unsigned char> m_flush;
    unsigned char m_pattern = 0;
};

}  // namespace kloop::runner
