// kloop runner: buffers and kl_args for one call.
#include "runner/call_buffers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "check/input_generator.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "spec/initializer.hpp"

namespace kloop::runner {

namespace {

kl_tensor make_tensor(const tensor_plan& t, void* data, kl_device device) {
    kl_tensor k{};
    k.name = t.name.c_str();
    k.data = data;
    k.dtype = static_cast<kl_dtype>(to_abi(t.type));
    k.device = device;
    if (t.shape.size() > KL_MAX_DIMS)
        throw std::runtime_error("tensor '" + t.name + "' has more than KL_MAX_DIMS dims");
    k.ndim = static_cast<int32_t>(t.shape.size());
    std::int64_t stride = 1;
    for (int d = k.ndim - 1; d >= 0; --d) {
        k.shape[d] = t.shape[static_cast<std::size_t>(d)];
        k.strides[d] = stride;
        stride *= k.shape[d];
    }
    return k;
}

}  // namespace

call_buffers::call_buffers(const call_plan& plan, executor_base& exec) : m_plan(plan), m_exec(exec) {
    for (const auto& t : plan.inputs) {
        m_inputs.emplace_back(t.type, t.numel());
        m_inits.push_back(spec::initializer::parse(t.init.empty() ? "normal(0, 1)" : t.init));
    }
    // Outputs are poisoned by construction (one pass: no zero fill first).
    for (const auto& t : plan.outputs)
        m_outputs.emplace_back(t.type, t.numel(), 256, check::guarded_buffer::initial_contents::poison);
    m_pristine.resize(m_inputs.size());
    for (const auto& p : plan.params) {
        kl_param q{};
        q.name = p.name.c_str();
        q.f64 = p.value;
        q.i64 = static_cast<std::int64_t>(p.value);
        m_params.push_back(q);
    }
    for (const auto& [name, value] : plan.dims) m_dim_names.push_back(name);
    std::size_t i = 0;
    for (const auto& [name, value] : plan.dims) m_dims.push_back(kl_dim{m_dim_names[i++].c_str(), value});
    if (m_exec.needs_mirrors()) {
        try {
            for (auto& b : m_inputs) m_device_in.push_back(m_exec.allocate(b.get_block_bytes()));
            for (auto& b : m_outputs) m_device_out.push_back(m_exec.allocate(b.get_block_bytes()));
        } catch (...) {
            for (void* p : m_device_in) m_exec.release(p);
            for (void* p : m_device_out) m_exec.release(p);
            throw;
        }
    }
    m_compare_on_device = m_exec.needs_mirrors() && !m_exec.has_cheap_readback() && m_exec.can_compare_on_device();
    rebuild_args();
}

call_buffers::~call_buffers() {
    for (void* p : m_device_pristine)
        if (p != nullptr) m_exec.release_private(p);
    if (m_device_differences != nullptr) m_exec.release_private(m_device_differences);
    for (void* p : m_device_in) m_exec.release(p);
    for (void* p : m_device_out) m_exec.release(p);
}

void call_buffers::make_device_pristine() {
    // The inputs' bytes on the device as they are now, before any call of the bench saw them.
    if (m_device_differences == nullptr) {
        m_device_differences = static_cast<std::uint64_t*>(m_exec.allocate_private(sizeof(std::uint64_t) * m_inputs.size()));
        m_differences.assign(m_inputs.size(), ~std::uint64_t{0});
        m_device_pristine.assign(m_inputs.size(), nullptr);
        for (std::size_t i = 0; i < m_inputs.size(); ++i)
            if (!m_plan.inputs[i].inout && m_inputs[i].bytes() > 0) m_device_pristine[i] = m_exec.allocate_private(m_inputs[i].bytes());
    }
    for (std::size_t i = 0; i < m_inputs.size(); ++i)
        if (m_device_pristine[i] != nullptr)
            m_exec.copy_on_device_deferred(m_device_pristine[i],
                                           static_cast<unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes(),
                                           m_inputs[i].bytes());
}

void call_buffers::for_each_buffer(const std::function<void(check::guarded_buffer&, void*&)>& f) {
    for (std::size_t i = 0; i < m_device_in.size(); ++i) f(m_inputs[i], m_device_in[i]);
    for (std::size_t i = 0; i < m_device_out.size(); ++i) f(m_outputs[i], m_device_out[i]);
}

void call_buffers::prepare() {
    for_each_buffer([&](check::guarded_buffer& b, void*& dev) { m_exec.upload(dev, b.get_block(), b.get_block_bytes()); });
    if (m_device_differences != nullptr) make_device_pristine();  // the new values are the pristine ones
}

void call_buffers::collect() {
    m_zones_collected = true;
    m_differences_fresh = false;  // the inputs are here: find_changed_inputs compares them itself
    std::vector<executor_base::download_span> spans;
    for_each_buffer([&](check::guarded_buffer& b, void*& dev) { spans.push_back({b.get_block(), dev, b.get_block_bytes()}); });
    m_exec.download_many(spans);
}

void call_buffers::rebuild_args() {
    m_in_tensors.clear();
    m_out_tensors.clear();
    const kl_device device = m_exec.get_device();
    auto data_of = [&](check::guarded_buffer& b, const std::vector<void*>& dev, std::size_t i) -> void* {
        if (dev.empty()) return b.data();
        return static_cast<unsigned char*>(dev[i]) + b.get_front_bytes();
    };
    for (std::size_t i = 0; i < m_inputs.size(); ++i)
        m_in_tensors.push_back(make_tensor(m_plan.inputs[i], data_of(m_inputs[i], m_device_in, i), device));
    for (std::size_t i = 0; i < m_outputs.size(); ++i)
        m_out_tensors.push_back(make_tensor(m_plan.outputs[i], data_of(m_outputs[i], m_device_out, i), device));
    m_args.abi_version = KL_ABI_VERSION;
    m_args.n_inputs = static_cast<int32_t>(m_in_tensors.size());
    m_args.inputs = m_in_tensors.data();
    m_args.n_outputs = static_cast<int32_t>(m_out_tensors.size());
    m_args.outputs = m_out_tensors.data();
    m_args.n_params = static_cast<int32_t>(m_params.size());
    m_args.params = m_params.data();
    m_args.n_dims = static_cast<int32_t>(m_dims.size());
    m_args.dims = m_dims.data();
    m_args.stream = m_exec.get_stream();
}

namespace {

[[noreturn]] void never_filled() {
    throw std::logic_error("call_buffers: inputs used before any fill_inputs / copy_inputs_from");
}

}  // namespace

void call_buffers::pristine_values::copy_to(void* dst) const {
    if (!base) never_filled();
    const std::size_t n = base->size();
    auto* d = static_cast<unsigned char*>(dst);
    parallel_memcpy(d, base->data() + shift_bytes, n - shift_bytes);
    parallel_memcpy(d + (n - shift_bytes), base->data(), shift_bytes);
    for (const auto& [off, bytes] : patches) std::memcpy(d + off, bytes.data(), bytes.size());
}

// The base's bytes (rotated) against now[from, to).
std::size_t call_buffers::pristine_values::first_difference_in(const unsigned char* now, std::size_t from,
                                                               std::size_t to) const {
    const std::size_t n = base->size();
    const std::size_t head = n - shift_bytes;  // now[k] = base[k + shift] for k < head
    auto cmp = [](const unsigned char* a, const unsigned char* b, std::size_t len) -> std::size_t {
        if (len >= (std::size_t{1} << 20)) return parallel_first_difference(a, b, len);
        for (std::size_t k = 0; k < len; ++k)
            if (a[k] != b[k]) return k;
        return len;
    };
    if (from < head) {
        const std::size_t end = std::min(to, head);
        const std::size_t d = cmp(now + from, base->data() + shift_bytes + from, end - from);
        if (d < end - from) return from + d;
        from = end;
    }
    if (from < to) {
        const std::size_t d = cmp(now + from, base->data() + (from - head), to - from);
        if (d < to - from) return from + d;
    }
    return to;
}

std::size_t call_buffers::pristine_values::first_difference(const void* now) const {
    if (!base) never_filled();
    const std::size_t n = base->size();
    const auto* p = static_cast<const unsigned char*>(now);
    std::size_t cursor = 0;
    for (const auto& [off, bytes] : patches) {
        if (const std::size_t d = first_difference_in(p, cursor, off); d < off) return d;
        for (std::size_t k = 0; k < bytes.size(); ++k)
            if (p[off + k] != bytes[k]) return off + k;
        cursor = off + bytes.size();
    }
    return first_difference_in(p, cursor, n);
}

void call_buffers::remember_pristine(std::size_t i) {
    // A new base unless this set is its only holder (a shared base is never modified).
    auto& p = m_pristine[i];
    if (!p.base || p.base.use_count() > 1) p.base = std::make_shared<std::vector<unsigned char>>();
    p.base->resize(m_inputs[i].bytes());
    p.shift_bytes = 0;
    p.patches.clear();
    parallel_memcpy(p.base->data(), m_inputs[i].data(), m_inputs[i].bytes());
}

void call_buffers::fill_inputs(std::uint64_t seed) {
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        const auto& t = m_plan.inputs[i];
        check::fill_input(m_inits[i], t.type, m_inputs[i].data(), t.numel(), m_plan.dims, derive_seed(seed, t.name));
        remember_pristine(i);
    }
}

void call_buffers::fill_inputs_shifted(const call_buffers& source, std::uint64_t seed) {
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        const auto& t = m_plan.inputs[i];
        const auto kind = m_inits[i].kind;
        const bool iid = kind == spec::init_kind::normal || kind == spec::init_kind::uniform ||
                         kind == spec::init_kind::randint || kind == spec::init_kind::logsigmoid_normal;
        const auto n = static_cast<std::uint64_t>(t.numel());
        if (!iid || n < 2) {
            check::fill_input(m_inits[i], t.type, m_inputs[i].data(), t.numel(), m_plan.dims, derive_seed(seed, t.name));
            remember_pristine(i);
        } else {
            rng r(derive_seed(seed, t.name));
            const std::uint64_t shift = 1 + r.next_below(n - 1);  // never 0: every position changes source
            // The source's values as filled (not its buffer, which an inout input's last call may
            // have changed), rotated once more: the same base, the shifts added.
            const auto& src = source.m_pristine[i];
            const std::size_t bytes = m_inputs[i].bytes();
            m_pristine[i] = {src.base, (src.shift_bytes + shift * size_bytes(t.type)) % bytes, {}};
            m_pristine[i].copy_to(m_inputs[i].data());
        }
    }
}

void call_buffers::poison_outputs() {
    for (auto& o : m_outputs) o.poison();
}

namespace {

bool draws_independently(spec::init_kind kind) {
    return kind == spec::init_kind::normal || kind == spec::init_kind::uniform || kind == spec::init_kind::randint ||
           kind == spec::init_kind::logsigmoid_normal;
}

// Beyond this many patched elements an input's remembered values are folded into a new base.
constexpr std::size_t k_max_patches = 4096;
// perturb_inputs scatters its elements inside a window of this many consecutive elements.
constexpr std::uint64_t k_perturb_window = 4096;

}  // namespace

void call_buffers::prepare_call() {
    if (!m_exec.needs_mirrors()) {
        poison_outputs();
        for (auto& b : m_inputs) b.reset_redzones();
        for (auto& b : m_outputs) b.reset_redzones();
        return;
    }
    if (m_compare_on_device && m_device_differences == nullptr) make_device_pristine();
    // The zones are rewritten unless the check after the last call found every one intact (then
    // they hold the canary already: rewriting them would copy the same bytes).
    if (!m_zones_intact)
        for_each_buffer([&](check::guarded_buffer& b, void*& dev) {
            b.reset_redzones();
            auto* d = static_cast<unsigned char*>(dev);
            const std::size_t front = b.get_front_bytes();
            m_exec.upload(d, b.get_block(), front);
            m_exec.upload(d + front + b.bytes(), b.get_block() + front + b.bytes(), b.get_redzone_bytes());
        });
    m_zones_intact = false;  // until the check after this call
    m_zones_collected = false;
    for (std::size_t i = 0; i < m_outputs.size(); ++i)
        m_exec.fill(static_cast<unsigned char*>(m_device_out[i]) + m_outputs[i].get_front_bytes(), 0xFF,
                    m_outputs[i].bytes());
}

void call_buffers::perturb_inputs(std::uint64_t seed, int count) {
    if (count <= 0) return;
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        const auto& t = m_plan.inputs[i];
        const auto n = static_cast<std::uint64_t>(t.numel());
        if (!draws_independently(m_inits[i].kind) || n < 2) continue;
        const std::size_t elem = size_bytes(t.type);
        const auto k = static_cast<std::int64_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(count), n));
        std::vector<unsigned char> fresh(static_cast<std::size_t>(k) * elem);
        check::fill_input(m_inits[i], t.type, fresh.data(), k, m_plan.dims, derive_seed(seed, t.name + "/values"));
        rng r(derive_seed(seed, t.name + "/positions"));
        auto& pristine = m_pristine[i];
        if (pristine.patches.size() >= k_max_patches) {  // fold the patches into a base of its own
            auto folded = std::make_shared<std::vector<unsigned char>>(pristine.base->size());
            pristine.copy_to(folded->data());
            pristine = {std::move(folded), 0, {}};
        }
        // The positions are scattered inside one window at a random place, so a mirror takes one
        // upload per input rather than one per element.
        auto* data = static_cast<unsigned char*>(m_inputs[i].data());
        const std::uint64_t window = std::min<std::uint64_t>(n, k_perturb_window);
        const std::uint64_t start = r.next_below(n - window + 1);
        std::size_t lo = SIZE_MAX, hi = 0;
        for (std::int64_t e = 0; e < k; ++e) {
            const std::size_t off = static_cast<std::size_t>(start + r.next_below(window)) * elem;
            const unsigned char* v = fresh.data() + static_cast<std::size_t>(e) * elem;
            std::memcpy(data + off, v, elem);
            pristine.patches[off].assign(v, v + elem);
            lo = std::min(lo, off);
            hi = std::max(hi, off + elem);
        }
        if (m_exec.needs_mirrors() && lo < hi) {
            m_exec.upload(static_cast<unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes() + lo, data + lo,
                          hi - lo);
            if (!m_device_pristine.empty() && m_device_pristine[i] != nullptr)
                m_exec.upload(static_cast<unsigned char*>(m_device_pristine[i]) + lo, data + lo, hi - lo);
        }
    }
}

void call_buffers::restore_inout_inputs() {
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        if (!m_plan.inputs[i].inout) continue;
        m_pristine[i].copy_to(m_inputs[i].data());
        if (m_exec.needs_mirrors())
            m_exec.upload(static_cast<unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes(), m_inputs[i].data(),
                          m_inputs[i].bytes());
    }
}

bool call_buffers::guards_cover_inputs() const {
    return !m_exec.needs_mirrors() || m_exec.has_cheap_readback() || m_device_differences != nullptr;
}

void call_buffers::add_zone_spans(check::guarded_buffer& b, const void* dev,
                                  std::vector<executor_base::download_span>& spans) {
    const auto* d = static_cast<const unsigned char*>(dev);
    const std::size_t front = b.get_front_bytes();
    spans.push_back({b.get_block(), d, front});
    spans.push_back({b.get_block() + front + b.bytes(), d + front + b.bytes(), b.get_redzone_bytes()});
}

void call_buffers::compare_inputs_on_device(std::vector<executor_base::download_span>& spans) {
    for (std::size_t i = 0; i < m_inputs.size(); ++i)
        if (m_device_pristine[i] != nullptr)
            m_exec.first_difference_deferred(static_cast<const unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes(),
                                             m_device_pristine[i], m_inputs[i].bytes(), m_device_differences + i);
    spans.push_back({m_differences.data(), m_device_differences, sizeof(std::uint64_t) * m_inputs.size()});
    m_differences_fresh = true;
}

void call_buffers::collect_guards() {
    if (!m_exec.needs_mirrors()) return;
    m_zones_collected = true;
    std::vector<executor_base::download_span> spans;  // every red zone, one synchronisation
    for_each_buffer([&](check::guarded_buffer& b, void*& dev) { add_zone_spans(b, dev, spans); });
    if (m_device_differences != nullptr) compare_inputs_on_device(spans);
    m_exec.download_many(spans);
    if (m_exec.has_cheap_readback())
        for (std::size_t i = 0; i < m_inputs.size(); ++i)
            m_exec.download(m_inputs[i].data(), static_cast<const unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes(),
                            m_inputs[i].bytes());
}

bool call_buffers::can_check_on_device_with(const call_buffers& ref) const {
    if (m_device_differences == nullptr || !ref.m_exec.needs_mirrors() || !m_exec.shares_device_memory_with(ref.m_exec))
        return false;
    for (std::size_t i = 0; i < m_inputs.size(); ++i)
        if (m_device_pristine[i] == nullptr && m_inputs[i].bytes() > 0) return false;  // inout
    return true;
}

void call_buffers::collect_for_check() {
    m_zones_collected = true;
    std::vector<executor_base::download_span> spans;
    for (std::size_t i = 0; i < m_inputs.size(); ++i) add_zone_spans(m_inputs[i], m_device_in[i], spans);
    compare_inputs_on_device(spans);
    for (std::size_t i = 0; i < m_outputs.size(); ++i)
        spans.push_back({m_outputs[i].get_block(), m_device_out[i], m_outputs[i].get_block_bytes()});
    m_exec.download_many(spans);
}

void call_buffers::take_inputs_on_device(const call_buffers& source) {
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        m_pristine[i] = source.m_pristine[i];  // the values, remembered (the host copy is not written)
        if (m_inputs[i].bytes() == 0) continue;
        m_exec.copy_on_device_deferred(static_cast<unsigned char*>(m_device_in[i]) + m_inputs[i].get_front_bytes(),
                                       source.m_device_pristine[i], m_inputs[i].bytes());
    }
    for (std::size_t i = 0; i < m_outputs.size(); ++i)
        m_exec.fill_deferred(static_cast<unsigned char*>(m_device_out[i]) + m_outputs[i].get_front_bytes(), 0xFF,
                             m_outputs[i].bytes());
    m_exec.settle();  // a reference may compute on another stream of the device
}

void call_buffers::collect_outputs() {
    std::vector<executor_base::download_span> spans;
    for (std::size_t i = 0; i < m_outputs.size(); ++i)
        spans.push_back({m_outputs[i].get_block(), m_device_out[i], m_outputs[i].get_block_bytes()});
    m_exec.download_many(spans);
}

std::uint64_t call_buffers::get_input_bytes() const {
    std::uint64_t n = 0;
    for (const auto& b : m_inputs) n += b.bytes();
    return n;
}

std::vector<input_change> call_buffers::find_changed_inputs() const {
    std::vector<input_change> changed;
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        if (m_plan.inputs[i].inout) continue;
        if (m_differences_fresh) {  // compared on the device after the last call (collect_guards)
            if (m_device_pristine[i] == nullptr || m_differences[i] >= m_inputs[i].bytes()) continue;
            const std::size_t elem = size_bytes(m_plan.inputs[i].type);
            changed.push_back({m_plan.inputs[i].name, static_cast<std::int64_t>(m_differences[i] / elem)});
            continue;
        }
        const std::size_t b = m_pristine[i].first_difference(m_inputs[i].data());
        if (b == m_inputs[i].bytes()) continue;
        const std::size_t elem = size_bytes(m_plan.inputs[i].type);
        changed.push_back({m_plan.inputs[i].name, static_cast<std::int64_t>(b / elem)});
    }
    return changed;
}

std::vector<red_zone_violation> call_buffers::find_red_zone_violations() const {
    std::vector<red_zone_violation> bad;
    auto scan = [&](const std::vector<check::guarded_buffer>& bufs, const std::vector<tensor_plan>& plans) {
        for (std::size_t i = 0; i < bufs.size(); ++i)
            if (auto off = bufs[i].first_redzone_violation()) bad.push_back({plans[i].name, *off});
    };
    scan(m_inputs, m_plan.inputs);
    scan(m_outputs, m_plan.outputs);
    // What this saw is what the mirror held when collect() or collect_guards() ran last.
    m_zones_intact = bad.empty() && m_zones_collected;
    return bad;
}

void call_buffers::copy_inputs_from(const call_buffers& other) {
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        m_pristine[i] = other.m_pristine[i];  // the same values, remembered once
        m_pristine[i].copy_to(m_inputs[i].data());
    }
}

}  // namespace kloop::runner
